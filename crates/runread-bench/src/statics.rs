//! `runread-bench static-server`: a plain HTTP/1.1 static file server on loopback (axum, the file
//! read from disk on every request, as a static server does): the baseline for artifact transfer.

use std::net::SocketAddr;

pub fn run(listen: SocketAddr, file: String) {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    rt.block_on(async move {
        let app = axum::Router::new().route(
            "/file",
            axum::routing::get(move || {
                let file = file.clone();
                async move {
                    match tokio::fs::read(&file).await {
                        Ok(bytes) => Ok((
                            [(http::header::CONTENT_TYPE, "application/octet-stream")],
                            bytes,
                        )),
                        Err(_) => Err(http::StatusCode::NOT_FOUND),
                    }
                }
            }),
        );
        let listener = tokio::net::TcpListener::bind(listen).await.expect("bind");
        println!("listening {}", listener.local_addr().expect("addr"));
        axum::serve(listener, app).await.expect("serve");
    });
}
