-- No text of a conversation in the store, previews included: the 80-character prompt preview
-- runread kept in each run's and each user entry's JSON is dropped (the owner's listing now
-- reads it from the session file when shown, through the redactor).
UPDATE runs SET run_json = (run_json::jsonb - 'preview')::text
 WHERE run_json::jsonb ? 'preview';
UPDATE entries SET summary_json = (summary_json::jsonb - 'preview')::text
 WHERE summary_json::jsonb ? 'preview';
