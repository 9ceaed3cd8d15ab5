-- A grant's label: a short text the owner (or `runread run --share … --label`) chose, so that a
-- reader can tell the run apart, and wait for "the run labelled X" before it is shared. Shown to
-- the reader as data written by the owner's tooling, never as instructions. NULL: none.
ALTER TABLE grants ADD COLUMN label TEXT;
