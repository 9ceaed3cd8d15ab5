//! A connector at a public URL (`serve --public-url`), over real sockets as a chat assistant's
//! OAuth client reaches it through a tunnel (the `Host` is the public one): discovery, dynamic
//! registration, the public authorization page and the owner's approval, PKCE, the token
//! endpoint, refresh rotation, revocation, and reading a shared run with the bearer token — and
//! each attack of the issue refused with its fixed code, nothing leaked.

use runread_store::prelude::*;
use std::sync::Arc;
use std::time::Duration;

use base64::Engine;
use serde_json::{Value, json};
use sha2::Digest;

use runread_core::Feature;
use runread_core::limits::{
    OAUTH_BODY_MAX_BYTES, OAUTH_PENDING_REQUESTS_MAX, OAUTH_UNAPPROVED_CLIENTS_MAX,
};
use runread_mcp::guards::Allowed;
use runread_mcp::public::PublicOrigin;
use runread_store::RunRecord;
use runread_testkit::Env;

const PUBLIC: &str = "https://runread.test";
const RESOURCE: &str = "https://runread.test/mcp";
const REDIRECT: &str = "https://client.example/callback";
const VERIFIER: &str = "a-verifier-of-the-client-that-is-long-enough-0123456789";

fn challenge(verifier: &str) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(sha2::Sha256::digest(verifier))
}

/// Parameters of an authorization request changed (`None`: left out).
type ParamChange<'a> = Vec<(&'a str, Option<&'a str>)>;

struct Door {
    env: Env,
    run: RunRecord,
    serving: runread_testkit::Serving,
    http: reqwest::Client,
}

impl Door {
    async fn start() -> Door {
        let env = Env::new();
        env.place("sample", Duration::from_secs(60));
        env.ingest();
        let run = env.longest_answer_run();
        let serving = serve(&env, PUBLIC).await;
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .unwrap();
        Door {
            env,
            run,
            serving,
            http,
        }
    }

    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.serving.addr)
    }

    fn get(&self, path: &str) -> reqwest::RequestBuilder {
        self.http.get(self.url(path)).header("host", "runread.test")
    }

    fn post(&self, path: &str) -> reqwest::RequestBuilder {
        self.http
            .post(self.url(path))
            .header("host", "runread.test")
    }

    async fn register(&self) -> String {
        self.register_as(json!({"client_name": "Stand-in connector", "redirect_uris": [REDIRECT]}))
            .await
    }

    /// Registers `metadata`; the client id.
    async fn register_as(&self, metadata: Value) -> String {
        let r = self.post("/register").json(&metadata).send().await.unwrap();
        assert_eq!(r.status(), 201);
        let body: Value = r.json().await.unwrap();
        assert_eq!(body["token_endpoint_auth_method"], "none");
        body["client_id"].as_str().unwrap().to_owned()
    }

    /// A client of its own registrant (the host of its first redirect URI is `n`'s), that can
    /// still be sent back to [`REDIRECT`].
    async fn register_from(&self, n: usize) -> String {
        let own = format!("https://client{n}.example/callback");
        self.register_as(
            json!({"client_name": format!("client {n}"), "redirect_uris": [own, REDIRECT]}),
        )
        .await
    }

    fn authorize_query(&self, client_id: &str, change: &[(&str, Option<&str>)]) -> String {
        let challenge = challenge(VERIFIER);
        let mut params: Vec<(&str, Option<&str>)> = vec![
            ("response_type", Some("code")),
            ("client_id", Some(client_id)),
            ("redirect_uri", Some(REDIRECT)),
            ("state", Some("client-state")),
            ("code_challenge", Some(&challenge)),
            ("code_challenge_method", Some("S256")),
            ("resource", Some(RESOURCE)),
            ("scope", Some("final_answer status")),
        ];
        for (k, v) in change {
            match params.iter_mut().find(|(name, _)| name == k) {
                Some(p) => p.1 = *v,
                None => params.push((k, *v)),
            }
        }
        let mut q = form_urlencoded::Serializer::new(String::new());
        for (k, v) in params {
            if let Some(v) = v {
                q.append_pair(k, v);
            }
        }
        q.finish()
    }

    /// The authorization page of a request of `client_id`.
    async fn authorize_page(&self, client_id: &str) -> reqwest::Response {
        let q = self.authorize_query(client_id, &[]);
        self.get(&format!("/authorize?{q}")).send().await.unwrap()
    }

    /// Opens the authorization page; its request id and the code it shows.
    async fn authorize(&self, client_id: &str) -> (String, String) {
        let page = self
            .get(&format!(
                "/authorize?{}",
                self.authorize_query(client_id, &[])
            ))
            .send()
            .await
            .unwrap();
        assert_eq!(page.status(), 200);
        let html = page.text().await.unwrap();
        let id = between(&html, "request=", "&").to_owned();
        let code = between(&html, "id=\"user-code\">", "<").to_owned();
        (id, code)
    }

    /// The owner approves the request as the reader `reader`: a new one, or — when a live
    /// reader has that name — joining it, as the owner chooses on the console's join page.
    fn approve(&self, request_id: &str, reader: &str) -> runread_store::Reader {
        self.approve_with(request_id, reader, &Feature::ALL)
    }

    fn approve_with(
        &self,
        request_id: &str,
        reader: &str,
        features: &[Feature],
    ) -> runread_store::Reader {
        use runread_service::owner::ReaderChoice;
        let existing = self.env.store.reader_by_name(reader).unwrap();
        let choice = match &existing {
            Some(r) => ReaderChoice::Join { reader_id: &r.id },
            None => ReaderChoice::New { name: reader },
        };
        self.env
            .owner()
            .approve_connection(
                request_id,
                choice,
                features,
                runread_core::timefmt::now_ms(),
            )
            .unwrap()
    }

    /// The redirect the waiting page continues with once decided (the browser carries the
    /// client's `state` back, as the page's refresh does).
    async fn continue_after_decision(&self, request_id: &str) -> reqwest::Response {
        self.continue_with_state(request_id, Some("client-state"))
            .await
    }

    async fn continue_with_state(
        &self,
        request_id: &str,
        state: Option<&str>,
    ) -> reqwest::Response {
        let mut q = form_urlencoded::Serializer::new(String::new());
        q.append_pair("request", request_id);
        if let Some(state) = state {
            q.append_pair("state", state);
        }
        self.get(&format!("/authorize/wait?{}", q.finish()))
            .send()
            .await
            .unwrap()
    }

    async fn code_for(&self, client_id: &str, reader: &str) -> String {
        let (id, _) = self.authorize(client_id).await;
        self.approve(&id, reader);
        let r = self.continue_after_decision(&id).await;
        assert_eq!(r.status(), 303);
        let location = r.headers()["location"].to_str().unwrap().to_owned();
        query_param(&location, "code").unwrap()
    }

    async fn token(&self, form: &[(&str, &str)]) -> (u16, Value) {
        let r = self.post("/token").form_body(form).send().await.unwrap();
        let status = r.status().as_u16();
        assert_eq!(r.headers()["cache-control"], "no-store");
        (status, r.json().await.unwrap())
    }

    async fn exchange(&self, client_id: &str, code: &str) -> (u16, Value) {
        self.token(&[
            ("grant_type", "authorization_code"),
            ("code", code),
            ("client_id", client_id),
            ("redirect_uri", REDIRECT),
            ("code_verifier", VERIFIER),
            ("resource", RESOURCE),
        ])
        .await
    }

    async fn refresh(&self, client_id: &str, refresh_token: &str) -> (u16, Value) {
        self.token(&[
            ("grant_type", "refresh_token"),
            ("refresh_token", refresh_token),
            ("client_id", client_id),
            ("resource", RESOURCE),
        ])
        .await
    }

    /// A client that is approved, holding tokens: (client id, token response).
    async fn connected(&self, reader: &str) -> (String, Value) {
        let client_id = self.register().await;
        let code = self.code_for(&client_id, reader).await;
        let (status, tokens) = self.exchange(&client_id, &code).await;
        assert_eq!(status, 200, "{tokens}");
        (client_id, tokens)
    }

    fn share(&self, reader: &str) {
        self.env.grant_to(
            reader,
            &self.run.target.run_id,
            Some(&self.run.target.session_id),
            vec![Feature::FinalAnswer, Feature::Status],
        );
    }

    /// One MCP call with `Authorization` (if any): (status, headers, body).
    async fn mcp(
        &self,
        bearer: Option<&str>,
        method: &str,
        params: Value,
    ) -> (u16, reqwest::header::HeaderMap, Value) {
        let mut req = self
            .post("/mcp")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2025-11-25")
            .json(&json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}));
        if let Some(b) = bearer {
            req = req.header("authorization", format!("Bearer {b}"));
        }
        let r = req.send().await.unwrap();
        let status = r.status().as_u16();
        let headers = r.headers().clone();
        let text = r.text().await.unwrap();
        (
            status,
            headers,
            serde_json::from_str(&text).unwrap_or(Value::String(text)),
        )
    }

    /// One MCP 2026-07-28 call with a bearer token, the request carrying its client's
    /// capabilities (`caps`) as that version has every request do: (status, body).
    async fn mcp_modern(
        &self,
        bearer: &str,
        method: &str,
        params: Value,
        caps: Value,
    ) -> (u16, Value) {
        let mut params = params;
        params["_meta"] = json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": {"name": "chat", "version": "1"},
            "io.modelcontextprotocol/clientCapabilities": caps
        });
        let mut req = self
            .post("/mcp")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", method)
            .header("authorization", format!("Bearer {bearer}"));
        // What the request names (a tool, a resource) goes in its header too.
        if let Some(name) = params["name"].as_str().or(params["uri"].as_str()) {
            req = req.header("mcp-name", name);
        }
        let r = req
            .json(&json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}))
            .send()
            .await
            .unwrap();
        let status = r.status().as_u16();
        let text = r.text().await.unwrap();
        (
            status,
            serde_json::from_str(&text).unwrap_or(Value::String(text)),
        )
    }

    async fn read_answer(&self, bearer: &str) -> (u16, Value) {
        let (status, _, body) = self
            .mcp(
                Some(bearer),
                "tools/call",
                json!({"name": "read_final_answer", "arguments": {"target": self.run.target}}),
            )
            .await;
        (status, body)
    }
}

async fn serve(env: &Env, public: &str) -> runread_testkit::Serving {
    runread_testkit::serve::mcp_with(
        env.service(),
        Allowed {
            public: Some(Arc::new(PublicOrigin::parse(public).unwrap())),
            ..Allowed::default()
        },
    )
    .await
}

/// A url-encoded form body (reqwest's `form` feature is not built).
trait FormBody {
    fn form_body(self, pairs: &[(&str, &str)]) -> Self;
}

impl FormBody for reqwest::RequestBuilder {
    fn form_body(self, pairs: &[(&str, &str)]) -> Self {
        let mut q = form_urlencoded::Serializer::new(String::new());
        for (k, v) in pairs {
            q.append_pair(k, v);
        }
        self.header("content-type", "application/x-www-form-urlencoded")
            .body(q.finish())
    }
}

fn between<'a>(s: &'a str, start: &str, end: &str) -> &'a str {
    let from = s.find(start).map(|i| i + start.len()).unwrap_or(s.len());
    let rest = s.get(from..).unwrap_or("");
    rest.get(..rest.find(end).unwrap_or(0)).unwrap_or("")
}

fn query_param(url: &str, name: &str) -> Option<String> {
    let q = url.split_once('?')?.1;
    form_urlencoded::parse(q.as_bytes())
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.into_owned())
}

fn tool_text(body: &Value) -> String {
    body["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or("")
        .to_owned()
}

fn tool_error_code(body: &Value) -> String {
    let text = tool_text(body);
    serde_json::from_str::<Value>(&text)
        .ok()
        .and_then(|v| v["code"].as_str().map(str::to_owned))
        .unwrap_or_default()
}

#[tokio::test]
async fn a_connector_reads_a_shared_run_after_the_owners_approval() {
    let d = Door::start().await;
    // Unauthenticated: 401 and the way to the metadata.
    let (status, headers, _) = d.mcp(None, "tools/list", json!({})).await;
    assert_eq!(status, 401);
    assert_eq!(
        headers["www-authenticate"],
        "Bearer resource_metadata=\"https://runread.test/.well-known/oauth-protected-resource/mcp\""
    );
    let prm: Value = d
        .get("/.well-known/oauth-protected-resource/mcp")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(prm["resource"], RESOURCE);
    assert_eq!(prm["authorization_servers"], json!([PUBLIC]));
    let root: Value = d
        .get("/.well-known/oauth-protected-resource")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(root, prm);
    let asm: Value = d
        .get("/.well-known/oauth-authorization-server")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(asm["issuer"], PUBLIC);
    assert_eq!(asm["code_challenge_methods_supported"], json!(["S256"]));
    assert_eq!(asm["authorization_response_iss_parameter_supported"], true);

    let client_id = d.register().await;
    let (request_id, user_code) = d.authorize(&client_id).await;
    assert_eq!(user_code.len(), 9);
    // Waiting: the page again, the same code, nothing of any run.
    let waiting = d.continue_after_decision(&request_id).await;
    assert_eq!(waiting.status(), 200);
    let html = waiting.text().await.unwrap();
    assert!(html.contains(&user_code));
    assert!(html.contains("Stand-in connector"));
    assert!(!html.contains(&d.run.target.run_id));
    assert!(!html.contains(&d.run.target.session_id));
    // The owner sees it on the console's list, with the same code, and approves.
    let pending = d
        .env
        .owner()
        .pending_connections(runread_core::timefmt::now_ms())
        .unwrap();
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0].user_code, user_code);
    d.approve(&request_id, "chat assistant");
    let r = d.continue_after_decision(&request_id).await;
    assert_eq!(r.status(), 303);
    let location = r.headers()["location"].to_str().unwrap().to_owned();
    assert!(location.starts_with(&format!("{REDIRECT}?")), "{location}");
    assert_eq!(
        query_param(&location, "state").as_deref(),
        Some("client-state")
    );
    assert_eq!(query_param(&location, "iss").as_deref(), Some(PUBLIC));
    let code = query_param(&location, "code").unwrap();
    // The page gives its code once.
    assert_eq!(d.continue_after_decision(&request_id).await.status(), 410);

    let (status, tokens) = d.exchange(&client_id, &code).await;
    assert_eq!(status, 200, "{tokens}");
    assert_eq!(tokens["token_type"], "Bearer");
    assert_eq!(tokens["scope"], "final_answer status");
    let access = tokens["access_token"].as_str().unwrap();
    // Approved, nothing shared yet: admitted, and the catalog is already the tools of the
    // features the owner allowed its client (final_answer, status) — the list a client fetches
    // once when it connects stays right when the run is shared later.
    let (status, _, body) = d.mcp(Some(access), "tools/list", json!({})).await;
    assert_eq!(status, 200, "{body}");
    let names: Vec<&str> = body["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert_eq!(
        names,
        [
            "list_granted_targets",
            "read_final_answer",
            "get_run",
            "wait_for_run",
            "request_access",
            "wait_for_access"
        ]
    );
    // The owner shares the run; the same token reads it at its next call.
    d.share("chat assistant");
    let (status, body) = d.read_answer(access).await;
    assert_eq!(status, 200);
    let expected = runread_testkit::answer(&d.run).unwrap();
    let structured = &body["result"]["structuredContent"];
    assert!(
        expected.starts_with(structured["text"].as_str().unwrap()),
        "{body}"
    );
    // The audit names the reader.
    let audit = d.env.store.audit(0, 10).unwrap();
    let reader = d
        .env
        .store
        .reader_by_name("chat assistant")
        .unwrap()
        .unwrap();
    assert!(
        audit
            .iter()
            .any(|(m, _)| m.reader_id.as_deref() == Some(reader.id.as_str()))
    );

    // Refresh rotates; the new pair works; the old refresh token replayed ends the family.
    let old_refresh = tokens["refresh_token"].as_str().unwrap().to_owned();
    let (status, rotated) = d.refresh(&client_id, &old_refresh).await;
    assert_eq!(status, 200, "{rotated}");
    assert_ne!(rotated["refresh_token"], tokens["refresh_token"]);
    let new_access = rotated["access_token"].as_str().unwrap().to_owned();
    assert_eq!(d.read_answer(&new_access).await.0, 200);
    let (status, replay) = d.refresh(&client_id, &old_refresh).await;
    assert_eq!((status, replay), (400, json!({"error": "invalid_grant"})));
    let (status, headers, body) = d.mcp(Some(&new_access), "tools/list", json!({})).await;
    assert_eq!(status, 401, "the replay revoked the family: {body}");
    assert!(
        headers["www-authenticate"]
            .to_str()
            .unwrap()
            .contains("error=\"invalid_token\"")
    );
    assert_eq!(body["error"]["data"]["code"], "invalid_key");
    let (status, _) = d
        .refresh(&client_id, rotated["refresh_token"].as_str().unwrap())
        .await;
    assert_eq!(status, 400);
}

#[tokio::test]
async fn revocation_and_reader_removal_end_tokens() {
    let d = Door::start().await;
    let (client_id, tokens) = d.connected("revoked").await;
    d.share("revoked");
    let access = tokens["access_token"].as_str().unwrap();
    assert_eq!(d.read_answer(access).await.0, 200);
    let r = d
        .post("/revoke")
        .form_body(&[("token", tokens["refresh_token"].as_str().unwrap())])
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(
        d.read_answer(access).await.0,
        401,
        "revoking the refresh token ends its access token"
    );
    // An unknown token is not an error (RFC 7009 2.2).
    let r = d
        .post("/revoke")
        .form_body(&[("token", "nothing")])
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);

    let (client_id2, tokens) = d.connected("removed").await;
    d.share("removed");
    let access = tokens["access_token"].as_str().unwrap();
    assert_eq!(d.read_answer(access).await.0, 200);
    d.env
        .owner()
        .remove_reader("removed", runread_core::timefmt::now_ms())
        .unwrap();
    assert_eq!(d.read_answer(access).await.0, 401);
    let (status, body) = d
        .refresh(&client_id2, tokens["refresh_token"].as_str().unwrap())
        .await;
    assert_eq!((status, body), (400, json!({"error": "invalid_grant"})));
    let _ = client_id;
}

#[tokio::test]
async fn a_code_is_single_use_and_bound_to_its_verifier_client_redirect_and_resource() {
    let d = Door::start().await;
    let client_id = d.register().await;
    // Reused: the second exchange fails and ends what the first one gave.
    let code = d.code_for(&client_id, "reuse").await;
    let (status, first) = d.exchange(&client_id, &code).await;
    assert_eq!(status, 200);
    let (status, again) = d.exchange(&client_id, &code).await;
    assert_eq!((status, again), (400, json!({"error": "invalid_grant"})));
    d.share("reuse");
    assert_eq!(
        d.read_answer(first["access_token"].as_str().unwrap())
            .await
            .0,
        401
    );
    // Each wrong parameter spends the code with invalid_grant (or invalid_target).
    let wrong_verifier = "b-verifier-of-the-client-that-is-long-enough-0123456789";
    for (name, value, error) in [
        ("code_verifier", wrong_verifier, "invalid_grant"),
        ("code_verifier", "short", "invalid_grant"),
        (
            "redirect_uri",
            "https://client.example/callback/",
            "invalid_grant",
        ),
        ("client_id", "dcr_someoneelse", "invalid_grant"),
        ("resource", "https://other.test/mcp", "invalid_target"),
    ] {
        let code = d.code_for(&client_id, "bound").await;
        let mut form = vec![
            ("grant_type", "authorization_code"),
            ("code", code.as_str()),
            ("client_id", client_id.as_str()),
            ("redirect_uri", REDIRECT),
            ("code_verifier", VERIFIER),
            ("resource", RESOURCE),
        ];
        for p in form.iter_mut() {
            if p.0 == name {
                p.1 = value;
            }
        }
        let (status, body) = d.token(&form).await;
        assert_eq!((status, body), (400, json!({"error": error})), "{name}");
        // Spent: even the right parameters are refused now.
        let (status, _) = d.exchange(&client_id, &code).await;
        assert_eq!(status, 400, "{name}");
    }
    // A missing resource, a repeated parameter, an unknown grant type.
    let code = d.code_for(&client_id, "bound").await;
    let (status, body) = d
        .token(&[
            ("grant_type", "authorization_code"),
            ("code", &code),
            ("client_id", &client_id),
            ("redirect_uri", REDIRECT),
            ("code_verifier", VERIFIER),
        ])
        .await;
    assert_eq!((status, body), (400, json!({"error": "invalid_request"})));
    let (status, body) = d
        .token(&[("grant_type", "password"), ("grant_type", "password")])
        .await;
    assert_eq!((status, body), (400, json!({"error": "invalid_request"})));
    let (status, body) = d.token(&[("grant_type", "client_credentials")]).await;
    assert_eq!(
        (status, body),
        (400, json!({"error": "unsupported_grant_type"}))
    );
}

#[tokio::test]
async fn the_authorization_page_refuses_without_redirecting() {
    let d = Door::start().await;
    let client_id = d.register().await;
    let plain = [
        ("code_challenge_method", Some("plain")),
        ("code_challenge", Some(VERIFIER)),
    ];
    let cases: Vec<(ParamChange, &str)> = vec![
        (vec![("code_challenge_method", None)], "invalid_request"),
        (plain.to_vec(), "invalid_request"),
        (vec![("code_challenge", None)], "invalid_request"),
        (vec![("resource", None)], "invalid_target"),
        (
            vec![("resource", Some("https://other.test/mcp"))],
            "invalid_target",
        ),
        (
            vec![("resource", Some("https://runread.test/mcp/"))],
            "invalid_target",
        ),
        (
            vec![("response_type", Some("token"))],
            "unsupported_response_type",
        ),
        (vec![("scope", Some("final_answer admin"))], "invalid_scope"),
        (vec![("client_id", Some("dcr_unknown"))], "invalid_client"),
        (
            vec![("redirect_uri", Some("https://client.example/callback/"))],
            "invalid_redirect_uri",
        ),
        (
            vec![("redirect_uri", Some("https://client.example:8443/callback"))],
            "invalid_redirect_uri",
        ),
        (
            vec![("redirect_uri", Some("http://client.example/callback"))],
            "invalid_redirect_uri",
        ),
        (
            vec![("redirect_uri", Some("https://client.example/callback#x"))],
            "invalid_redirect_uri",
        ),
        (
            vec![("redirect_uri", Some("https://user@client.example/callback"))],
            "invalid_redirect_uri",
        ),
        (
            vec![("redirect_uri", Some("https://evil.example/callback"))],
            "invalid_redirect_uri",
        ),
        (vec![("redirect_uri", None)], "invalid_request"),
    ];
    for (change, error) in cases {
        let r = d
            .get(&format!(
                "/authorize?{}",
                d.authorize_query(&client_id, &change)
            ))
            .send()
            .await
            .unwrap();
        assert!(r.headers().get("location").is_none(), "{change:?}");
        assert!(r.status().is_client_error(), "{change:?}");
        let html = r.text().await.unwrap();
        assert!(
            html.contains(&format!("<p id=\"error\">{error}</p>")),
            "{change:?}: {html}"
        );
        assert!(
            !html.contains("evil.example") && !html.contains("client.example"),
            "{change:?}"
        );
    }
    // A parameter given twice.
    let twice = format!(
        "/authorize?{}&state=second",
        d.authorize_query(&client_id, &[])
    );
    let r = d.get(&twice).send().await.unwrap();
    assert_eq!(r.status(), 400);
    // An open redirect through `state`: it is echoed, never followed.
    let evil_state = "https://evil.example/steal";
    let q = d.authorize_query(&client_id, &[("state", Some(evil_state))]);
    let html = d
        .get(&format!("/authorize?{q}"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let id = between(&html, "request=", "&").to_owned();
    d.approve(&id, "state");
    let r = d.continue_with_state(&id, Some(evil_state)).await;
    let location = r.headers()["location"].to_str().unwrap();
    assert!(location.starts_with(&format!("{REDIRECT}?")), "{location}");
    assert_eq!(query_param(location, "state").as_deref(), Some(evil_state));
    // Denied: back to the client with access_denied.
    let (id, _) = d.authorize(&client_id).await;
    d.env
        .owner()
        .deny_connection(&id, runread_core::timefmt::now_ms())
        .unwrap();
    let r = d.continue_after_decision(&id).await;
    let location = r.headers()["location"].to_str().unwrap();
    assert_eq!(
        query_param(location, "error").as_deref(),
        Some("access_denied")
    );
    assert!(query_param(location, "code").is_none());
}

/// RFC 8252 §7.3: a native client (Codex's `codex mcp login`, Pi) picks its loopback port at
/// run time, so a registered loopback `http` redirect URI matches at any port; its scheme, host,
/// path and query still match exactly, and the token request names the very URI the code went to.
#[tokio::test]
async fn a_loopback_redirect_uri_matches_at_any_port_and_nothing_else_is_loosened() {
    let d = Door::start().await;
    let client_id = d
        .register_as(json!({"client_name": "Native client", "redirect_uris": [
            "http://127.0.0.1/callback", "http://localhost:1455/auth/callback", "http://[::1]/callback"
        ]}))
        .await;
    let page_of = |redirect: &'static str| {
        let q = d.authorize_query(&client_id, &[("redirect_uri", Some(redirect))]);
        let d = &d;
        async move { d.get(&format!("/authorize?{q}")).send().await.unwrap() }
    };
    for accepted in [
        "http://127.0.0.1/callback",
        "http://127.0.0.1:53177/callback",
        "http://localhost:1455/auth/callback",
        "http://localhost:40001/auth/callback",
        "http://[::1]:8123/callback",
    ] {
        let page = page_of(accepted).await;
        assert_eq!(page.status(), 200, "{accepted}");
        // Denied at once: a client's waiting requests are bounded.
        let html = page.text().await.unwrap();
        let id = between(&html, "request=", "&").to_owned();
        let now = runread_core::timefmt::now_ms();
        d.env.owner().deny_connection(&id, now).unwrap();
    }
    for refused in [
        "http://127.0.0.1:53177/callback/",
        "http://127.0.0.1:53177/callback?x=1",
        "https://127.0.0.1:53177/callback",
        "http://localhost:53177/callback",
        "http://127.0.0.2:53177/callback",
        "http://127.0.0.1:53177/other",
        "http://user@127.0.0.1:53177/callback",
        "http://127.0.0.1:53177/callback#frag",
    ] {
        let r = page_of(refused).await;
        assert!(r.status().is_client_error(), "{refused}");
        assert!(r.headers().get("location").is_none(), "{refused}");
        let html = r.text().await.unwrap();
        assert!(
            html.contains("<p id=\"error\">invalid_redirect_uri</p>"),
            "{refused}: {html}"
        );
    }
    // The whole flow at a port picked at run time; the token request must name that port.
    let asked = "http://127.0.0.1:53177/callback";
    let token_form = |code: &str, redirect: &str| -> Vec<(String, String)> {
        [
            ("grant_type", "authorization_code"),
            ("code", code),
            ("client_id", client_id.as_str()),
            ("redirect_uri", redirect),
            ("code_verifier", VERIFIER),
            ("resource", RESOURCE),
        ]
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
    };
    for (redirect_at_token, status) in [("http://127.0.0.1:53178/callback", 400), (asked, 200)] {
        let html = page_of(asked).await.text().await.unwrap();
        let id = between(&html, "request=", "&").to_owned();
        d.approve(&id, "native");
        let r = d.continue_after_decision(&id).await;
        let location = r.headers()["location"].to_str().unwrap().to_owned();
        assert!(location.starts_with(&format!("{asked}?")), "{location}");
        let code = query_param(&location, "code").unwrap();
        let form = token_form(&code, redirect_at_token);
        let pairs: Vec<(&str, &str)> = form.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        let (got, body) = d.token(&pairs).await;
        assert_eq!(got, status, "{redirect_at_token}: {body}");
    }
}

#[tokio::test]
async fn the_authorization_page_is_never_framed_cached_or_scripted() {
    let d = Door::start().await;
    let client_id = d.register().await;
    let r = d
        .get(&format!(
            "/authorize?{}",
            d.authorize_query(&client_id, &[])
        ))
        .send()
        .await
        .unwrap();
    let h = r.headers();
    let csp = h["content-security-policy"].to_str().unwrap();
    assert!(csp.contains("frame-ancestors 'none'") && csp.contains("default-src 'none'"));
    assert_eq!(h["x-frame-options"], "DENY");
    assert_eq!(h["cache-control"], "no-store");
    // A client's name is text on the page, never markup.
    let r = d
        .post("/register")
        .json(&json!({"client_name": "<script>alert(1)</script>", "redirect_uris": [REDIRECT]}))
        .send()
        .await
        .unwrap();
    let id: Value = r.json().await.unwrap();
    let html = d
        .get(&format!(
            "/authorize?{}",
            d.authorize_query(id["client_id"].as_str().unwrap(), &[])
        ))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(!html.contains("<script>") && html.contains("&lt;script&gt;"));
}

#[tokio::test]
async fn registrations_and_waiting_requests_are_bounded() {
    let d = Door::start().await;
    // Clients never approved: N, not N + 1 (each of its own registrant, under its share).
    let mut clients = Vec::new();
    for n in 0..OAUTH_UNAPPROVED_CLIENTS_MAX as usize {
        clients.push(d.register_from(n).await);
    }
    let r = d
        .post("/register")
        .json(&json!({"redirect_uris": ["https://another.example/cb"]}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 503);
    assert_eq!(
        r.json::<Value>().await.unwrap(),
        json!({"error": "temporarily_unavailable"})
    );
    // Requests waiting for the owner: N, not N + 1.
    for i in 0..OAUTH_PENDING_REQUESTS_MAX as usize {
        d.authorize(&clients[i % clients.len()]).await;
    }
    let r = d
        .get(&format!(
            "/authorize?{}",
            d.authorize_query(&clients[0], &[])
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 503);
    // Registration metadata runread refuses.
    for bad in [
        json!({"redirect_uris": []}),
        json!({"redirect_uris": ["http://evil.example/cb"]}),
        json!({"redirect_uris": [REDIRECT], "token_endpoint_auth_method": "client_secret_basic"}),
        json!({"redirect_uris": [REDIRECT], "grant_types": ["client_credentials"]}),
        json!({"redirect_uris": "https://a.example/cb"}),
        json!({"redirect_uris": [REDIRECT], "client_name": "x".repeat(runread_core::limits::OAUTH_CLIENT_NAME_MAX_BYTES + 1)}),
    ] {
        let r = d.post("/register").json(&bad).send().await.unwrap();
        assert_eq!(r.status(), 400, "{bad}");
    }
    // Bodies: N bytes read, N + 1 refused 413.
    let at = "a".repeat(OAUTH_BODY_MAX_BYTES);
    let r = d
        .post("/token")
        .header("content-type", "application/x-www-form-urlencoded")
        .body(at.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    let r = d
        .post("/token")
        .header("content-type", "application/x-www-form-urlencoded")
        .body(format!("{at}a"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 413);
}

#[tokio::test]
async fn a_token_is_refused_at_another_resource() {
    let d = Door::start().await;
    let (_, tokens) = d.connected("elsewhere").await;
    d.share("elsewhere");
    let access = tokens["access_token"].as_str().unwrap();
    assert_eq!(d.read_answer(access).await.0, 200);
    // The same store behind another public URL: another resource.
    let other = serve(&d.env, "https://other.test").await;
    let r = d
        .http
        .post(format!("http://{}/mcp", other.addr))
        .header("host", "other.test")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-11-25")
        .header("authorization", format!("Bearer {access}"))
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401);
    let body = r.text().await.unwrap();
    assert!(body.contains("invalid_key") && !body.contains(access));
}

#[tokio::test]
async fn the_owners_cap_on_features_holds_over_any_grant() {
    let d = Door::start().await;
    let client_id = d.register().await;
    let (id, _) = d.authorize(&client_id).await;
    d.approve_with(&id, "capped", &[Feature::Status]);
    let r = d.continue_after_decision(&id).await;
    let code = query_param(r.headers()["location"].to_str().unwrap(), "code").unwrap();
    let (_, tokens) = d.exchange(&client_id, &code).await;
    assert_eq!(tokens["scope"], "status");
    // The run is shared with every feature; the client reads only its status.
    d.share("capped");
    let access = tokens["access_token"].as_str().unwrap();
    let (status, body) = d.read_answer(access).await;
    assert_eq!(status, 200);
    assert_eq!(tool_error_code(&body), "feature_not_granted", "{body}");
    assert!(!tool_text(&body).contains(&runread_testkit::answer(&d.run).unwrap()));
    let (_, _, list) = d.mcp(Some(access), "tools/list", json!({})).await;
    let names: Vec<&str> = list["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert!(
        names.contains(&"get_run") && !names.contains(&"read_final_answer"),
        "{names:?}"
    );
}

#[tokio::test]
async fn tunnel_headers_pass_and_a_key_still_works_but_never_with_a_token() {
    let d = Door::start().await;
    let (_, tokens) = d.connected("both").await;
    let shared = d.env.grant_to(
        "key reader",
        &d.run.target.run_id,
        Some(&d.run.target.session_id),
        vec![Feature::FinalAnswer],
    );
    let key = shared.key.unwrap();
    let call = |with_bearer: bool, with_key: bool| {
        let mut req = d
            .post("/mcp")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2025-11-25")
            .header("x-forwarded-for", "203.0.113.9")
            .header("x-forwarded-proto", "https")
            .header("cf-connecting-ip", "203.0.113.9")
            .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}));
        if with_bearer {
            req = req.header(
                "authorization",
                format!("Bearer {}", tokens["access_token"].as_str().unwrap()),
            );
        }
        if with_key {
            req = req.header("x-runread-key", key.clone());
        }
        req.send()
    };
    assert_eq!(call(true, false).await.unwrap().status(), 200);
    assert_eq!(call(false, true).await.unwrap().status(), 200);
    let both = call(true, true).await.unwrap();
    assert_eq!(both.status(), 400);
    assert!(both.text().await.unwrap().contains("duplicate_key"));
    // A Host that is neither loopback nor the public one.
    let r = d
        .http
        .post(d.url("/mcp"))
        .header("host", "runread.test.evil.example")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 403);
    // Cookies stay refused behind the tunnel.
    let r = d.post("/mcp").header("cookie", "a=b").send().await.unwrap();
    assert_eq!(r.status(), 400);
}

#[test]
fn client_metadata_documents_at_private_addresses_are_never_fetched() {
    runread_testkit::serve::block_on(async {
        let fetcher = runread_mcp::cimd::Fetcher::new(vec![]);
        for url in [
            "https://127.0.0.1/client.json",
            "https://localhost/client.json",
            "https://10.0.0.1/client.json",
            "https://169.254.169.254/latest/meta-data",
            "https://[::1]/client.json",
            "http://client.example/client.json",
        ] {
            assert_eq!(
                fetcher.client(url).await,
                Err(runread_service::oauth::OAuthError::InvalidClient),
                "{url}"
            );
        }
    });
}

/// An unauthenticated flood at the public URL costs what keyless calls cost: each request is
/// answered `401` on its headers alone — its declared body never arrives and is never waited for
/// (a body read would end `408` at the deadline, or `503` beyond the body readers) — and the
/// connector's own calls pass meanwhile.
#[test]
fn unauthenticated_requests_are_answered_on_their_headers_alone() {
    use std::io::{Read, Write};
    let rt = tokio::runtime::Runtime::new().unwrap();
    let d = rt.block_on(Door::start());
    let (_, tokens) = rt.block_on(d.connected("flooded"));
    let addr = d.serving.addr;
    let flood: Vec<std::thread::JoinHandle<String>> = (0..runread_mcp::guards::BODY_READERS_MAX + 8)
        .map(|_| {
            std::thread::spawn(move || {
                let mut c = std::net::TcpStream::connect(addr).unwrap();
                c.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
                c.write_all(
                    b"POST /mcp HTTP/1.1\r\nHost: runread.test\r\nContent-Type: application/json\r\n\
                      Content-Length: 30000\r\n\r\n{",
                )
                .unwrap();
                let mut head = [0u8; 12];
                c.read_exact(&mut head).unwrap();
                String::from_utf8_lossy(&head).into_owned()
            })
        })
        .collect();
    for h in flood {
        assert_eq!(h.join().unwrap(), "HTTP/1.1 401");
    }
    let access = tokens["access_token"].as_str().unwrap();
    let (status, _, _) = rt.block_on(d.mcp(Some(access), "tools/list", json!({})));
    assert_eq!(status, 200);
}

/// Issue 46, finding 1: a client that registers under an existing reader's name is shown as
/// such and becomes a new reader; it reads nothing the named reader was shared, and joining an
/// existing reader is only ever by that reader's id, after its live grants were shown.
#[tokio::test]
async fn a_client_named_after_a_reader_never_becomes_it() {
    use runread_service::owner::ReaderError;
    use runread_service::owner::{DecideError, ReaderChoice};
    let d = Door::start().await;
    d.share("claude-code");
    let claude = d.env.store.reader_by_name("claude-code").unwrap().unwrap();
    let client_id = d
        .register_as(json!({"client_name": "claude-code", "redirect_uris": [REDIRECT]}))
        .await;
    let (id, _) = d.authorize(&client_id).await;
    let now = runread_core::timefmt::now_ms();
    let owner = d.env.owner();
    // What the console offers: a new reader named from the client, never the reader's name.
    let offered = owner.suggested_reader_name("claude-code").unwrap();
    assert_eq!(offered, "claude-code (connector)");
    owner.add_reader("claude-code (connector)", now).unwrap();
    assert_eq!(
        owner.suggested_reader_name("claude-code").unwrap(),
        "claude-code (connector 2)"
    );
    // Typing the reader's name (or one like it) does not join it.
    let approve = |choice| owner.approve_connection(&id, choice, &Feature::ALL, now);
    assert!(matches!(
        approve(ReaderChoice::New {
            name: "claude-code"
        }),
        Err(DecideError::Reader(ReaderError::Taken(_)))
    ));
    assert!(matches!(
        approve(ReaderChoice::New {
            name: "CLAUDE-CODE"
        }),
        Err(DecideError::Reader(ReaderError::LooksLike { .. }))
    ));
    assert!(matches!(
        approve(ReaderChoice::New {
            name: "cIaude-code"
        }),
        Err(DecideError::Reader(ReaderError::LooksLike { .. }))
    ));
    assert!(matches!(
        approve(ReaderChoice::Join {
            reader_id: "r-nobody"
        }),
        Err(DecideError::NoSuchReader)
    ));
    // What joining would let it read is shown first.
    let (reader, live) = owner.join_preview(&claude.id, now).unwrap().unwrap();
    assert_eq!((reader.name.as_str(), live.len()), ("claude-code", 1));
    // Approved as offered: a reader of its own, which reads nothing shared with claude-code.
    let made = approve(ReaderChoice::New {
        name: "claude-code (connector 2)",
    })
    .unwrap();
    assert_ne!(made.id, claude.id);
    let r = d.continue_after_decision(&id).await;
    let code = query_param(r.headers()["location"].to_str().unwrap(), "code").unwrap();
    let (status, tokens) = d.exchange(&client_id, &code).await;
    assert_eq!(status, 200, "{tokens}");
    let (status, body) = d
        .read_answer(tokens["access_token"].as_str().unwrap())
        .await;
    assert_eq!(status, 200);
    assert_eq!(tool_error_code(&body), "not_granted", "{body}");
    assert!(!tool_text(&body).contains(&runread_testkit::answer(&d.run).unwrap()));
}

/// Issue 46, finding 6: names that would show as another name are refused at registration (a
/// client's) and at `reader add` (a reader's).
#[tokio::test]
async fn client_names_with_bidi_or_zero_width_characters_are_refused() {
    let d = Door::start().await;
    for name in [
        "edoc\u{202E}claude",
        "claude\u{200B}code",
        "claude\u{2066}code",
    ] {
        let r = d
            .post("/register")
            .json(&json!({"client_name": name, "redirect_uris": [REDIRECT]}))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 400, "{name:?}");
        let body = r.text().await.unwrap();
        assert_eq!(body, r#"{"error":"invalid_client_metadata"}"#, "{name:?}");
        assert!(
            d.env
                .owner()
                .add_reader(name, runread_core::timefmt::now_ms())
                .is_err(),
            "{name:?}"
        );
    }
}

/// Issue 46, findings 2 and 6: unapproved registrations are bounded per registrant and waiting
/// requests per client (N of one allowed, N + 1 refused with OAuth's `temporarily_unavailable`,
/// another still let in), and a client the owner approved before gets in when unknown clients
/// fill the bound.
#[tokio::test]
async fn the_connectors_bounds_have_shares_and_never_keep_a_known_client_out() {
    use runread_core::limits::{
        OAUTH_PENDING_REQUESTS_PER_CLIENT_MAX, OAUTH_UNAPPROVED_CLIENTS_PER_REGISTRANT_MAX,
    };
    let d = Door::start().await;
    let (known, _) = d.connected("known").await;
    for _ in 0..OAUTH_UNAPPROVED_CLIENTS_PER_REGISTRANT_MAX {
        d.register().await;
    }
    let r = d
        .post("/register")
        .json(&json!({"client_name": "one more", "redirect_uris": [REDIRECT]}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 503, "N + 1 of one registrant");
    assert_eq!(
        r.json::<Value>().await.unwrap(),
        json!({"error": "temporarily_unavailable"})
    );
    // Unknown clients, each of its own registrant, fill the bound on waiting requests: each up
    // to its share, not one more.
    let per_client = OAUTH_PENDING_REQUESTS_PER_CLIENT_MAX as usize;
    let clients = OAUTH_PENDING_REQUESTS_MAX as usize / per_client;
    let mut ids = Vec::new();
    for n in 0..clients {
        ids.push(d.register_from(100 + n).await);
    }
    for id in &ids {
        for _ in 0..per_client {
            assert_eq!(d.authorize_page(id).await.status(), 200);
        }
    }
    let over = d.authorize_page(&ids[0]).await;
    assert_eq!(over.status(), 503, "N + 1 of one client");
    assert!(
        over.text()
            .await
            .unwrap()
            .contains("temporarily_unavailable")
    );
    let fresh = d.register_from(999).await;
    assert_eq!(
        d.authorize_page(&fresh).await.status(),
        503,
        "the bound on unknown clients"
    );
    // The client the owner approved before still signs in again.
    assert_eq!(d.authorize_page(&known).await.status(), 200);
}

/// Issue 46, finding 2: eight connections that send `POST /token` headers and part of a body,
/// then stall, hold no processing slot: a connected client's refresh and a registration are
/// answered meanwhile, and each stalled request ends at the body's deadline.
#[test]
fn stalled_token_bodies_beside_a_working_refresh() {
    use std::io::{Read, Write};
    let rt = tokio::runtime::Runtime::new().unwrap();
    let d = rt.block_on(Door::start());
    let (client_id, tokens) = rt.block_on(d.connected("steady"));
    let addr = d.serving.addr;
    let stalled: Vec<std::net::TcpStream> = (0..runread_mcp::connector::OAUTH_IN_FLIGHT_MAX + 8)
        .map(|_| {
            let mut c = std::net::TcpStream::connect(addr).unwrap();
            c.write_all(
                b"POST /token HTTP/1.1\r\nHost: runread.test\r\n\
                  Content-Type: application/x-www-form-urlencoded\r\nContent-Length: 100\r\n\r\n\
                  grant_type",
            )
            .unwrap();
            c
        })
        .collect();
    std::thread::sleep(Duration::from_millis(300));
    let started = std::time::Instant::now();
    let (status, rotated) =
        rt.block_on(d.refresh(&client_id, tokens["refresh_token"].as_str().unwrap()));
    assert_eq!(status, 200, "{rotated}");
    let registered = rt.block_on(
        d.post("/register")
            .json(&json!({"client_name": "meanwhile", "redirect_uris": [REDIRECT]}))
            .send(),
    );
    assert_eq!(registered.unwrap().status(), 201);
    assert!(
        started.elapsed() < Duration::from_secs(runread_core::limits::HTTP_BODY_DEADLINE_SECS),
        "answered before the stalled bodies' deadline"
    );
    for mut c in stalled {
        c.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        let mut head = [0u8; 12];
        c.read_exact(&mut head).unwrap();
        assert_eq!(
            &head, b"HTTP/1.1 400",
            "ended at the deadline, as invalid_request"
        );
    }
}

/// At the cap on requests processed at once, the connector answers OAuth's own
/// `temporarily_unavailable` (a page on the authorization page's paths), never a JSON-RPC body.
#[test]
fn at_the_cap_the_answer_is_an_oauth_error() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let d = rt.block_on(Door::start());
    // A metadata document host that accepts and never answers: each authorization request that
    // names one holds its slot until the fetch's deadline.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = silent.local_addr().unwrap().port();
    let held = std::thread::spawn(move || {
        (0..runread_mcp::connector::OAUTH_IN_FLIGHT_MAX)
            .map(|_| silent.accept().unwrap().0)
            .collect::<Vec<_>>()
    });
    let serving = rt.block_on(runread_testkit::serve::mcp_with(d.env.service(), {
        let mut public = PublicOrigin::parse(PUBLIC).unwrap();
        public.cimd_private_hosts = vec!["127.0.0.1".into()];
        Allowed {
            public: Some(Arc::new(public)),
            ..Allowed::default()
        }
    }));
    let base = format!("http://{}", serving.addr);
    let client_id = format!("https://127.0.0.1:{port}/client.json");
    let q = d.authorize_query(&client_id, &[]);
    let slow: Vec<_> = (0..runread_mcp::connector::OAUTH_IN_FLIGHT_MAX)
        .map(|_| {
            let (http, url) = (d.http.clone(), format!("{base}/authorize?{q}"));
            rt.spawn(async move { http.get(url).header("host", "runread.test").send().await })
        })
        .collect();
    let _connections = held.join().unwrap();
    let token = rt
        .block_on(
            d.http
                .post(format!("{base}/token"))
                .header("host", "runread.test")
                .form_body(&[("grant_type", "refresh_token")])
                .send(),
        )
        .unwrap();
    assert_eq!(token.status(), 503);
    assert_eq!(token.headers()["retry-after"], "1");
    assert_eq!(
        rt.block_on(token.json::<Value>()).unwrap(),
        json!({"error": "temporarily_unavailable"})
    );
    let page = rt
        .block_on(
            d.http
                .get(format!("{base}/authorize?{q}"))
                .header("host", "runread.test")
                .send(),
        )
        .unwrap();
    assert_eq!(page.status(), 503);
    assert!(
        rt.block_on(page.text())
            .unwrap()
            .contains("<p id=\"error\">temporarily_unavailable</p>")
    );
    for s in slow {
        let _ = rt.block_on(s);
    }
}

/// Issue 46, finding 6: any exchange that presents a code spends it — one missing `resource` or
/// with a parameter given twice too — so it cannot be retried.
#[tokio::test]
async fn a_failed_exchange_of_any_kind_spends_its_code() {
    let d = Door::start().await;
    let client_id = d.register().await;
    let full = |code: &str| {
        vec![
            ("grant_type", "authorization_code".to_owned()),
            ("code", code.to_owned()),
            ("client_id", client_id.clone()),
            ("redirect_uri", REDIRECT.to_owned()),
            ("code_verifier", VERIFIER.to_owned()),
            ("resource", RESOURCE.to_owned()),
        ]
    };
    type Form = Vec<(&'static str, String)>;
    type Break<'a> = Box<dyn Fn(&str) -> Form + 'a>;
    let broken: Vec<Break> = vec![
        Box::new(|c| {
            full(c)
                .into_iter()
                .filter(|(k, _)| *k != "resource")
                .collect()
        }),
        Box::new(|c| {
            let mut f = full(c);
            f.push(("client_id", "dcr_other".into()));
            f
        }),
        Box::new(|c| {
            let mut f = full(c);
            f.push(("code", c.into()));
            f
        }),
        Box::new(|c| {
            full(c)
                .into_iter()
                .filter(|(k, _)| *k != "code_verifier")
                .collect()
        }),
    ];
    for (i, make) in broken.iter().enumerate() {
        let code = d.code_for(&client_id, "spent").await;
        let form = make(&code);
        let pairs: Vec<(&str, &str)> = form.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let (status, body) = d.token(&pairs).await;
        assert_eq!(status, 400, "case {i}: {body}");
        let (status, body) = d.exchange(&client_id, &code).await;
        assert_eq!(
            (status, body),
            (400, json!({"error": "invalid_grant"})),
            "case {i}: spent"
        );
    }
}

/// Issue 46, finding 6: the client's `state` is not kept: the store holds its digest, and the
/// waiting page continues only with the same `state` the request began with.
#[tokio::test]
async fn the_state_is_carried_by_the_browser_and_only_its_digest_is_kept() {
    let d = Door::start().await;
    let client_id = d.register().await;
    let (id, _) = d.authorize(&client_id).await;
    let kept = d.env.store.oauth_request(&id).unwrap().unwrap();
    assert_eq!(
        kept.state_sha256.as_deref(),
        Some(runread_core::sha256_hex(b"client-state").as_str())
    );
    for file in ["runread.db", "runread.db-wal"] {
        let bytes = std::fs::read(d.env.dir.path().join(file)).unwrap_or_default();
        assert!(!bytes.windows(12).any(|w| w == b"client-state"), "{file}");
    }
    d.approve(&id, "stateful");
    for wrong in [None, Some("other-state")] {
        let r = d.continue_with_state(&id, wrong).await;
        assert_eq!(r.status(), 400, "{wrong:?}");
        assert!(r.headers().get("location").is_none());
    }
    let r = d.continue_after_decision(&id).await;
    assert_eq!(r.status(), 303);
    let location = r.headers()["location"].to_str().unwrap();
    assert_eq!(
        query_param(location, "state").as_deref(),
        Some("client-state")
    );
}

/// Issue 46, finding 6: rotating a connector's reader's key ends its OAuth tokens too.
#[tokio::test]
async fn rotating_a_readers_key_ends_its_connectors_tokens() {
    let d = Door::start().await;
    let (client_id, tokens) = d.connected("rotated").await;
    d.share("rotated");
    let access = tokens["access_token"].as_str().unwrap();
    assert_eq!(d.read_answer(access).await.0, 200);
    d.env
        .owner()
        .rotate_reader("rotated", runread_core::timefmt::now_ms())
        .unwrap();
    assert_eq!(d.read_answer(access).await.0, 401);
    let (status, body) = d
        .refresh(&client_id, tokens["refresh_token"].as_str().unwrap())
        .await;
    assert_eq!((status, body), (400, json!({"error": "invalid_grant"})));
}

/// The MCP Apps view over the connector: a chat assistant's host announcing the extension in its
/// requests (2026-07-28) sees `read_final_answer` link the view and reads the page with its
/// token once a run is shared with it; before that, and without announcing, it does not.
#[tokio::test]
async fn a_connector_announcing_mcp_apps_reads_the_view_once_a_run_is_shared_with_it() {
    use runread_mcp::view::{EXTENSION_ID, VIEW_MIME_TYPE, VIEW_URI};
    let d = Door::start().await;
    let (_, tokens) = d.connected("chat assistant").await;
    let access = tokens["access_token"].as_str().unwrap();
    let ui = json!({"extensions": {EXTENSION_ID: {"mimeTypes": [VIEW_MIME_TYPE]}}});
    let read_view = || {
        d.mcp_modern(
            access,
            "resources/read",
            json!({"uri": VIEW_URI}),
            ui.clone(),
        )
    };
    let (status, body) = read_view().await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["error"]["code"], -32602, "nothing shared yet: {body}");
    d.share("chat assistant");
    let (_, listed) = d
        .mcp_modern(access, "tools/list", json!({}), ui.clone())
        .await;
    let tools = listed["result"]["tools"].as_array().unwrap();
    let answer = tools
        .iter()
        .find(|t| t["name"] == "read_final_answer")
        .unwrap();
    assert_eq!(answer["_meta"]["ui"]["resourceUri"], VIEW_URI, "{answer}");
    let (status, body) = read_view().await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body["result"]["contents"][0]["mimeType"], VIEW_MIME_TYPE,
        "{body}"
    );
    assert_eq!(
        body["result"]["contents"][0]["text"],
        runread_mcp::view::VIEW_HTML
    );
    let (_, plain) = d
        .mcp_modern(
            access,
            "resources/read",
            json!({"uri": VIEW_URI}),
            json!({}),
        )
        .await;
    assert_eq!(plain["error"]["code"], -32601, "not announced: {plain}");
}
