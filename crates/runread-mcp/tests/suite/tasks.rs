//! The Tasks extension (`io.modelcontextprotocol/tasks`), with rmcp's client declaring it: a
//! `read_final_answer` on a run that has not settled answers with a task handle; `tasks/get` is
//! `working` until the run settles, then `completed` with the very result the call returns; the
//! handle is stateless (signed arguments, bound to the reader, with an expiry), so a changed
//! argument, another reader's handle and an expired one are refused `invalid_task`. A client that
//! did not declare the extension is answered as always.

use runread_store::prelude::*;

use serde_json::{Value, json};

use rmcp::ClientLifecycleMode;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CancelTaskParams, ClientCapabilities, ClientConfig,
    GetTaskParams, TaskStatus,
};
use rmcp::service::{RoleClient, RunningService};

use runread_core::Feature;
use runread_core::cursor::TaskHandle;

use runread_testkit::Env;

type TasksClient = RunningService<RoleClient, ClientConfig>;

/// rmcp's client on 2026-07-28 (`server/discover`), declaring the Tasks extension (or not) on
/// every request.
async fn connect(url: &str, key: &str, tasks: bool) -> TasksClient {
    let capabilities = if tasks {
        ClientCapabilities::builder().enable_tasks().build()
    } else {
        ClientCapabilities::default()
    };
    let lifecycle = ClientLifecycleMode::Discover {
        preferred_versions: vec![rmcp::model::ProtocolVersion::V_2026_07_28],
    };
    crate::support::rmcp_client(url, key, capabilities, lifecycle).await
}

fn read_args(target: &Value) -> CallToolRequestParams {
    let Value::Object(args) = json!({"target": target}) else {
        unreachable!()
    };
    CallToolRequestParams::new("read_final_answer").with_arguments(args)
}

/// The fixed code of a JSON-RPC error.
fn code_of(e: &rmcp::ServiceError) -> String {
    match e {
        rmcp::ServiceError::McpError(data) => data
            .data
            .as_ref()
            .and_then(|d| d["code"].as_str())
            .unwrap_or_default()
            .to_owned(),
        other => format!("not a JSON-RPC error: {other}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_is_working_until_the_run_settles_then_carries_the_answer() {
    let env = Env::new();
    let (path, tail) = env.place_unfinished("sample");
    env.ingest();
    let run = env.running_run();
    let serving = runread_testkit::serve::mcp(env.service_settling_at_once()).await;
    let target = serde_json::to_value(&run.target).unwrap();
    let g = env.grant(&run.target.run_id, vec![Feature::FinalAnswer], "tasks");
    let client = connect(&serving.url, &g.key, true).await;
    let advertised = client
        .peer_info()
        .is_some_and(|info| info.capabilities.supports_tasks());
    assert!(advertised, "server/discover advertises the extension");

    let CallToolResponse::Task(created) = client.call_tool_once(read_args(&target)).await.unwrap()
    else {
        panic!("a task for a run that has not settled");
    };
    let task = created.task;
    assert_eq!(task.status, TaskStatus::Working);
    assert_eq!(
        task.poll_interval_ms,
        Some(runread_core::limits::TASK_POLL_INTERVAL_MS)
    );
    assert_eq!(
        task.ttl_ms,
        Some(runread_core::limits::TASK_TTL_SECS as u64 * 1_000)
    );
    let polled = client
        .get_task(GetTaskParams::new(task.task_id.clone()))
        .await
        .unwrap();
    assert_eq!(polled.task.status(), TaskStatus::Working);
    // A task writes nothing to the audit while it works: nothing was served.
    assert!(env.store.audit(0, 100).unwrap().is_empty());

    // The same call from a client that did not declare the extension: answered as always.
    let plain = connect(&serving.url, &g.key, false).await;
    let CallToolResponse::Complete(saving) =
        plain.call_tool_once(read_args(&target)).await.unwrap()
    else {
        panic!("no task for a client without the extension");
    };
    let saving = saving.structured_content.unwrap();
    assert_ne!(saving["state"], "available", "{saving}");

    Env::append(&path, &tail);
    env.ingest();
    let done = client
        .get_task(GetTaskParams::new(task.task_id.clone()))
        .await
        .unwrap();
    assert_eq!(done.task.status(), TaskStatus::Completed);
    let rmcp::model::TaskPayload::Completed { result } = done.task.payload else {
        panic!("a completed task carries its result");
    };
    let CallToolResponse::Complete(direct) =
        plain.call_tool_once(read_args(&target)).await.unwrap()
    else {
        panic!("a settled run is answered");
    };
    let direct = direct.structured_content.unwrap();
    assert_eq!(direct["state"], "available", "{direct}");
    assert_eq!(
        result["structuredContent"], direct,
        "the task's result is the call's"
    );
    assert_eq!(result["isError"], false);

    // Cancelling a valid handle is acknowledged; nothing is held for it.
    client
        .cancel_task(CancelTaskParams::new(task.task_id.clone()))
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_changed_foreign_or_expired_task_handle_is_refused() {
    let env = Env::new();
    let _unfinished = env.place_unfinished("sample");
    env.ingest();
    let run = env.running_run();
    let serving = runread_testkit::serve::mcp(env.service()).await;
    let target = serde_json::to_value(&run.target).unwrap();
    let mine = env.grant(&run.target.run_id, vec![Feature::FinalAnswer], "mine");
    let theirs = env.grant(&run.target.run_id, vec![Feature::FinalAnswer], "theirs");
    let client = connect(&serving.url, &mine.key, true).await;
    let other = connect(&serving.url, &theirs.key, true).await;
    let CallToolResponse::Task(created) = client.call_tool_once(read_args(&target)).await.unwrap()
    else {
        panic!("a task");
    };
    let id = created.task.task_id;
    let now = runread_core::timefmt::now_ms();
    let key = env.store.cursor_key();
    let opened = key.open_task(&mine.reader.id, &id, now).unwrap();

    let mut changed = opened.clone();
    changed.args["limit"] = json!(8);
    let changed = key.seal_task(&mine.reader.id, &changed).unwrap();
    let expired = key
        .seal_task(
            &mine.reader.id,
            &TaskHandle {
                expires_ms: now - 1,
                ..opened.clone()
            },
        )
        .unwrap();
    // A handle whose arguments were changed keeps the old signature: refused.
    let (_, mac) = id.rsplit_once('.').unwrap();
    let (changed_payload, _) = changed.rsplit_once('.').unwrap();
    let forged = format!("{changed_payload}.{mac}");

    for (what, who, handle) in [
        ("a changed argument", &client, forged.as_str()),
        ("another reader's handle", &other, id.as_str()),
        ("an expired handle", &client, expired.as_str()),
        ("not a handle", &client, "rrt1.x.y"),
    ] {
        let e = who
            .get_task(GetTaskParams::new(handle.to_owned()))
            .await
            .expect_err(what);
        assert_eq!(code_of(&e), "invalid_task", "{what}: {e}");
        let text = e.to_string();
        for leak in [&run.target.run_id, &mine.key, &theirs.key] {
            assert!(!text.contains(leak.as_str()), "{what}: {text}");
        }
        let e = who
            .cancel_task(CancelTaskParams::new(handle.to_owned()))
            .await
            .expect_err(what);
        assert_eq!(code_of(&e), "invalid_task", "{what}: {e}");
    }
    // The reader's own handle, unchanged, still works.
    let ok = client.get_task(GetTaskParams::new(id)).await.unwrap();
    assert_eq!(ok.task.status(), TaskStatus::Working);
}

/// Issue 46, finding 4: polling a settled task writes one start record and one receipt, however
/// often it is polled (2,000 times here), and every poll answers the same result.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_settled_task_polled_two_thousand_times_writes_one_receipt() {
    let env = Env::new();
    let (path, tail) = env.place_unfinished("sample");
    env.ingest();
    let run = env.running_run();
    // The bound on calls per reader is not what is tested here: room for every poll.
    let service = env.service_with(runread_service::Config {
        settle_quiet: std::time::Duration::ZERO,
        calls_per_minute: 10_000,
        ..runread_service::Config::default()
    });
    let serving = runread_testkit::serve::mcp(service).await;
    let target = serde_json::to_value(&run.target).unwrap();
    let g = env.grant(&run.target.run_id, vec![Feature::FinalAnswer], "poller");
    let client = connect(&serving.url, &g.key, true).await;
    let CallToolResponse::Task(created) = client.call_tool_once(read_args(&target)).await.unwrap()
    else {
        panic!("a task");
    };
    Env::append(&path, &tail);
    env.ingest();
    let mut first: Option<Value> = None;
    for _ in 0..2_000 {
        let done = client
            .get_task(GetTaskParams::new(created.task.task_id.clone()))
            .await
            .unwrap();
        let rmcp::model::TaskPayload::Completed { result } = done.task.payload else {
            panic!("settled: completed");
        };
        let result = Value::Object(result);
        assert_eq!(result["isError"], false, "{result}");
        match &first {
            None => first = Some(result),
            Some(f) => assert_eq!(&result, f, "every poll answers the same"),
        }
    }
    let audit = env.store.audit(0, 10_000).unwrap();
    assert_eq!(audit.len(), 1, "one start record");
    assert_eq!(audit[0].1.len(), 1, "one receipt: {:?}", audit[0].1);
    assert_eq!(audit[0].1[0].outcome, "ok");
}

/// `wait_for_access` on a request still waiting is a task that completes with the owner's
/// decision: `working` while nobody decided, then `completed` carrying `approved` and the
/// exact target shared. A client without the extension waits as always.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wait_for_access_task_completes_with_the_owners_decision() {
    let env = Env::new();
    env.place("sample", std::time::Duration::from_secs(60));
    env.ingest();
    let serving = runread_testkit::serve::mcp(env.service_settling_at_once()).await;
    let reader = env.add_reader("asking");
    let client = connect(&serving.url, &reader.key, true).await;
    let Value::Object(args) = json!({"agent": "pi", "latest": 1}) else {
        unreachable!()
    };
    let CallToolResponse::Complete(asked) = client
        .call_tool_once(CallToolRequestParams::new("request_access").with_arguments(args))
        .await
        .unwrap()
    else {
        panic!("request_access is answered at once");
    };
    let id = asked.structured_content.unwrap()["requestId"]
        .as_str()
        .unwrap()
        .to_owned();
    let Value::Object(wait) = json!({"requestId": id}) else {
        unreachable!()
    };
    let wait = CallToolRequestParams::new("wait_for_access").with_arguments(wait);
    let CallToolResponse::Task(created) = client.call_tool_once(wait.clone()).await.unwrap() else {
        panic!("a task for a request still waiting");
    };
    let task_id = created.task.task_id;
    let polled = client
        .get_task(GetTaskParams::new(task_id.clone()))
        .await
        .unwrap();
    assert_eq!(polled.task.status(), TaskStatus::Working);

    let now = runread_core::timefmt::now_ms();
    let approved = env
        .owner()
        .approve_request(&id, Default::default(), now)
        .unwrap();
    let shared = approved.grants[0].run.target.clone();
    let done = client.get_task(GetTaskParams::new(task_id)).await.unwrap();
    assert_eq!(done.task.status(), TaskStatus::Completed);
    let rmcp::model::TaskPayload::Completed { result } = done.task.payload else {
        panic!("a completed task carries its result");
    };
    let result = serde_json::to_value(&result).unwrap();
    let decided = &result["structuredContent"];
    assert_eq!(decided["state"], "approved", "{result}");
    assert_eq!(
        decided["targets"][0]["target"],
        serde_json::to_value(&shared).unwrap()
    );
    // Decided: the same call is answered at once, task or not.
    let CallToolResponse::Complete(again) = client.call_tool_once(wait).await.unwrap() else {
        panic!("a decided request is answered at once");
    };
    assert_eq!(again.structured_content.unwrap()["state"], "approved");
}
