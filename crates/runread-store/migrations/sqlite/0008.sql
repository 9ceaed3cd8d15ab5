-- No text of a conversation in the store, previews included: the 80-character prompt preview
-- runread kept in each run's and each user entry's JSON is dropped (the owner's listing now
-- reads it from the session file when shown, through the redactor).
UPDATE runs SET run_json = json_remove(run_json, '$.preview')
 WHERE json_type(run_json, '$.preview') IS NOT NULL;
UPDATE entries SET summary_json = json_remove(summary_json, '$.preview')
 WHERE json_type(summary_json, '$.preview') IS NOT NULL;
