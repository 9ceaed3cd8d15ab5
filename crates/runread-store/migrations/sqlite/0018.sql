-- What a call's result carried, recorded with its receipt: the evidence it was read from
-- (`supervised`, `session_file`, `snapshot`; a run's origin, `passive` or `supervised`, for a
-- status) and its settled state (`settled`, `not_settled`, `not_found`, or a final answer's
-- state), in the tool's own words, which the gate records without reading. NULL: the tool's
-- result has none, or the receipt was written before this migration (its audit digest then
-- leaves them out, as it did when it was written).
ALTER TABLE receipts ADD COLUMN evidence TEXT;
ALTER TABLE receipts ADD COLUMN state TEXT;
