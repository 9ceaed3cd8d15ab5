//! CORS for browser-based clients (`serve --public-url … --cors-origin ORIGIN`), over real sockets
//! with the public `Host` and the headers a browser sends (`Origin`, `Sec-Fetch-*`): preflights
//! and actual requests from an allowed origin, from another one, and with no `--cors-origin`, on
//! every endpoint that has CORS — and none on the loopback keyed door.

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;

use runread_core::Feature;
use runread_mcp::guards::Allowed;
use runread_mcp::public::PublicOrigin;
use runread_testkit::Env;

const PUBLIC: &str = "https://runread.test";
const APP: &str = "https://app.example";
const OTHER: &str = "https://evil.example";

struct Door {
    serving: runread_testkit::Serving,
    key: String,
    http: reqwest::Client,
    _env: Env,
}

/// A connector's door at [`PUBLIC`] with `cors` as `--cors-origin`, and a key of a granted run.
async fn door(cors: &[&str]) -> Door {
    let env = Env::new();
    env.place("sample", Duration::from_secs(60));
    env.ingest();
    let run = env.longest_answer_run();
    let g = env.grant(&run.target.run_id, Feature::ALL.to_vec(), "cors");
    let mut public = PublicOrigin::parse(PUBLIC).unwrap();
    public.cors_origins = cors
        .iter()
        .map(|o| runread_mcp::cors::parse_origin(o).unwrap())
        .collect();
    let serving = runread_testkit::serve::mcp_with(
        env.service(),
        Allowed {
            public: Some(Arc::new(public)),
            ..Allowed::default()
        },
    )
    .await;
    Door {
        serving,
        key: g.key,
        http: reqwest::Client::new(),
        _env: env,
    }
}

impl Door {
    /// A request from a page on `origin`, as a browser's `fetch` sends it cross-site.
    fn page(&self, origin: &str, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        self.page_in_mode(origin, "cors", method, path)
    }

    /// A cross-site request from a page on `origin` in fetch mode `mode`.
    fn page_in_mode(
        &self,
        origin: &str,
        mode: &str,
        method: reqwest::Method,
        path: &str,
    ) -> reqwest::RequestBuilder {
        self.http
            .request(method, format!("http://{}{path}", self.serving.addr))
            .header("host", "runread.test")
            .header("origin", origin)
            .header("sec-fetch-site", "cross-site")
            .header("sec-fetch-mode", mode)
    }

    /// A browser's preflight of `method` with `headers` from a page on `origin`.
    async fn preflight(
        &self,
        origin: &str,
        path: &str,
        method: &str,
        headers: &str,
    ) -> reqwest::Response {
        self.page(origin, reqwest::Method::OPTIONS, path)
            .header("access-control-request-method", method)
            .header("access-control-request-headers", headers)
            .send()
            .await
            .unwrap()
    }
}

fn header(r: &reqwest::Response, name: &str) -> Option<String> {
    r.headers()
        .get(name)
        .map(|v| v.to_str().unwrap().to_ascii_lowercase())
}

/// Every endpoint with CORS, the method a browser client uses there and the headers it sends.
const ENDPOINTS: [(&str, &str, &str); 6] = [
    (
        "/mcp",
        "POST",
        "authorization,content-type,mcp-protocol-version",
    ),
    (
        "/.well-known/oauth-protected-resource/mcp",
        "GET",
        "mcp-protocol-version",
    ),
    (
        "/.well-known/oauth-protected-resource",
        "GET",
        "mcp-protocol-version",
    ),
    (
        "/.well-known/oauth-authorization-server",
        "GET",
        "mcp-protocol-version",
    ),
    ("/register", "POST", "content-type"),
    ("/token", "POST", "content-type"),
];

#[tokio::test]
async fn a_preflight_from_an_allowed_origin_is_answered_on_every_cors_endpoint() {
    let d = door(&[APP, "http://localhost:5173"]).await;
    for (path, method, headers) in ENDPOINTS {
        let r = d.preflight(APP, path, method, headers).await;
        assert!(r.status().is_success(), "{path}: {}", r.status());
        assert_eq!(
            header(&r, "access-control-allow-origin").as_deref(),
            Some(APP),
            "{path}"
        );
        let methods = header(&r, "access-control-allow-methods").unwrap();
        assert!(
            methods.contains(&method.to_ascii_lowercase()),
            "{path}: {methods}"
        );
        let allowed = header(&r, "access-control-allow-headers").unwrap();
        for h in headers.split(',') {
            assert!(allowed.contains(h), "{path}: {h} not in {allowed}");
        }
        assert!(
            header(&r, "access-control-allow-credentials").is_none(),
            "{path}: runread's credentials are headers, never cookies"
        );
    }
    // The second origin too, and each is answered with itself only.
    let r = d
        .preflight("http://localhost:5173", "/mcp", "POST", "content-type")
        .await;
    assert_eq!(
        header(&r, "access-control-allow-origin").as_deref(),
        Some("http://localhost:5173")
    );
}

#[tokio::test]
async fn a_preflight_from_another_origin_gets_no_allow_origin() {
    let d = door(&[APP]).await;
    for (path, method, headers) in ENDPOINTS {
        for origin in [
            OTHER,
            "https://app.example.evil.example",
            "http://app.example",
            "null",
        ] {
            let r = d.preflight(origin, path, method, headers).await;
            assert!(
                header(&r, "access-control-allow-origin").is_none(),
                "{path} from {origin}"
            );
        }
    }
}

#[tokio::test]
async fn an_allowed_origins_requests_pass_the_guards_and_carry_allow_origin() {
    let d = door(&[APP]).await;
    // Discovery: the metadata documents.
    for path in [
        "/.well-known/oauth-protected-resource/mcp",
        "/.well-known/oauth-authorization-server",
    ] {
        let r = d
            .page(APP, reqwest::Method::GET, path)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200, "{path}");
        assert_eq!(
            header(&r, "access-control-allow-origin").as_deref(),
            Some(APP)
        );
    }
    // Registration and a refused token request: the page can read the answer, errors included.
    let r = d
        .page(APP, reqwest::Method::POST, "/register")
        .json(&json!({"client_name": "In a page", "redirect_uris": ["https://app.example/cb"]}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201);
    assert_eq!(
        header(&r, "access-control-allow-origin").as_deref(),
        Some(APP)
    );
    let r = d
        .page(APP, reqwest::Method::POST, "/token")
        .header("content-type", "application/x-www-form-urlencoded")
        .body("grant_type=authorization_code&code=nothing")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    assert_eq!(
        header(&r, "access-control-allow-origin").as_deref(),
        Some(APP)
    );
    // /mcp without a credential: the challenge, readable by the page (exposed).
    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}});
    let mcp = |b: reqwest::RequestBuilder| {
        b.header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(call.to_string())
    };
    let r = mcp(d.page(APP, reqwest::Method::POST, "/mcp"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401);
    assert!(header(&r, "www-authenticate").is_some());
    assert_eq!(
        header(&r, "access-control-allow-origin").as_deref(),
        Some(APP)
    );
    let exposed = header(&r, "access-control-expose-headers").unwrap();
    assert!(exposed.contains("www-authenticate"), "{exposed}");
    // With a credential the call passes every guard, cross-site as it is.
    let r = mcp(d.page(APP, reqwest::Method::POST, "/mcp"))
        .header("x-runread-key", &d.key)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(
        header(&r, "access-control-allow-origin").as_deref(),
        Some(APP)
    );
}

#[tokio::test]
async fn another_origin_is_refused_at_mcp_and_never_allowed_to_read() {
    let d = door(&[APP]).await;
    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}});
    let r = d
        .page(OTHER, reqwest::Method::POST, "/mcp")
        .header("x-runread-key", &d.key)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(call.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 403);
    assert!(header(&r, "access-control-allow-origin").is_none());
    let v: serde_json::Value = r.json().await.unwrap();
    assert_eq!(v["error"]["data"]["code"], "forbidden_origin");
    // The metadata is public, but another origin's page may not read it.
    let r = d
        .page(
            OTHER,
            reqwest::Method::GET,
            "/.well-known/oauth-authorization-server",
        )
        .send()
        .await
        .unwrap();
    assert!(header(&r, "access-control-allow-origin").is_none());
}

/// An allowed origin's page may fetch; it may not navigate to `/mcp`, post a `no-cors` form or
/// open a websocket there: the fetch-metadata rule stands for everything but a CORS fetch.
#[tokio::test]
async fn an_allowed_origin_gets_nothing_but_cors_fetches_at_mcp() {
    let d = door(&[APP]).await;
    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}});
    // The same call in `cors` mode passes: only the mode differs below.
    let r = d
        .page(APP, reqwest::Method::POST, "/mcp")
        .header("x-runread-key", &d.key)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(call.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    for mode in ["navigate", "no-cors", "websocket"] {
        let r = d
            .page_in_mode(APP, mode, reqwest::Method::POST, "/mcp")
            .header("x-runread-key", &d.key)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(call.to_string())
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 403, "{mode}");
    }
    // A second `Sec-Fetch-Mode` or a second `Origin` cannot hide behind a listed one.
    for (name, value) in [("sec-fetch-mode", "navigate"), ("origin", OTHER)] {
        let r = d
            .page(APP, reqwest::Method::POST, "/mcp")
            .header(name, value)
            .header("x-runread-key", &d.key)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(call.to_string())
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 403, "a second {name}");
    }
}

#[tokio::test]
async fn without_cors_origin_no_endpoint_answers_cors() {
    let d = door(&[]).await;
    for (path, method, headers) in ENDPOINTS {
        let r = d.preflight(APP, path, method, headers).await;
        assert!(!r.status().is_success(), "{path}: {}", r.status());
        assert!(
            header(&r, "access-control-allow-origin").is_none(),
            "{path}"
        );
        let r = d
            .page(APP, reqwest::Method::GET, path)
            .send()
            .await
            .unwrap();
        assert!(
            header(&r, "access-control-allow-origin").is_none(),
            "{path}"
        );
    }
}

#[tokio::test]
async fn the_loopback_keyed_door_never_answers_cors() {
    let env = Env::new();
    let serving = runread_testkit::serve::mcp(env.service()).await;
    let r = reqwest::Client::new()
        .request(reqwest::Method::OPTIONS, &serving.url)
        .header("origin", APP)
        .header("access-control-request-method", "POST")
        .header("access-control-request-headers", "x-runread-key")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 403);
    assert!(header(&r, "access-control-allow-origin").is_none());
}
