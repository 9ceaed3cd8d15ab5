//! The accept loop under the guards: HTTP/1.1 only, bounded connections, bounded header bytes,
//! a header deadline from accept, and no spinning when accepting fails.
//!
//! - At most [`HTTP_CONNECTIONS_MAX`] connections are open at once. At the cap runread stops
//!   accepting: further connections wait in the kernel's accept queue (no descriptor, no memory
//!   in runread) and are accepted in arrival order as open ones close.
//! - A connection must deliver a request's line and headers within [`HEADER_DEADLINE`] of being
//!   accepted, and each further request on a kept-alive connection within [`HEADER_DEADLINE`] of
//!   the end of the previous response; otherwise it is closed, without a response. A request
//!   being served (its body read, processed, its response written) is not on this clock: the
//!   body has its own deadline and processing its own bounds.
//! - Request line and headers are at most [`HTTP_HEADER_MAX_BYTES`] (hyper answers 431 and
//!   closes), and hyper's read buffer is held to the same size, so an open connection holds at
//!   most that much of what a client sent before its key is checked.
//! - An error from `accept` that is not about the one connection (descriptors or memory used up:
//!   `EMFILE`, `ENFILE`, `ENOBUFS`, `ENOMEM`) is retried after [`ACCEPT_ERROR_BACKOFF`], never at
//!   once: the loop does not spin while connections time out and free descriptors.
//! - Only HTTP/1.1 (and 1.0) is served; an HTTP/2 preface is refused by hyper's HTTP/1 parser and
//!   the connection closed.

use std::convert::Infallible;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use hyper::body::{Body, Frame, SizeHint};
use tokio::net::TcpListener;
use tokio::sync::{Semaphore, watch};
use tokio::time::Instant;

use runread_core::limits::{
    HTTP_CONNECTIONS_MAX, HTTP_HEADER_DEADLINE_SECS, HTTP_HEADER_MAX_BYTES,
};

/// Time a connection has, from accept (or from the end of its previous response), to deliver a
/// whole request line and headers.
pub const HEADER_DEADLINE: Duration = Duration::from_secs(HTTP_HEADER_DEADLINE_SECS);
/// Wait before accepting again after `accept` failed for want of descriptors or memory.
pub const ACCEPT_ERROR_BACKOFF: Duration = Duration::from_secs(1);

/// What one accept gave.
enum Accepted {
    Connection(tokio::net::TcpStream, SocketAddr),
    /// Nothing to serve this time (a connection that failed before it was accepted, or a pause
    /// after an error of the listener): accept again.
    Again,
    /// Shutting down.
    Stop,
}

/// Accepts one connection, unless `shutdown` comes first; an error of the listener itself is
/// logged and waited out for [`ACCEPT_ERROR_BACKOFF`].
async fn accept(
    listener: &TcpListener,
    shutdown: &mut Pin<&mut impl Future<Output = ()>>,
) -> Accepted {
    let accepted = tokio::select! {
        accepted = listener.accept() => accepted,
        () = shutdown.as_mut() => return Accepted::Stop,
    };
    match accepted {
        Ok((stream, peer)) => Accepted::Connection(stream, peer),
        // This connection failed before it was accepted: nothing to wait for.
        Err(e) if is_connection_error(&e) => Accepted::Again,
        Err(e) => {
            tracing::warn!(
                error = %e,
                "accept failed; retrying in {}s",
                ACCEPT_ERROR_BACKOFF.as_secs()
            );
            tokio::select! {
                () = tokio::time::sleep(ACCEPT_ERROR_BACKOFF) => Accepted::Again,
                () = shutdown.as_mut() => Accepted::Stop,
            }
        }
    }
}

/// Accepts on `listener` and serves `app` on each connection until `shutdown` resolves; then
/// lets open connections finish, for at most `drain`.
pub async fn run(
    listener: TcpListener,
    app: axum::routing::RouterIntoService<axum::body::Body>,
    shutdown: impl Future<Output = ()> + Send + 'static,
    drain: Duration,
) {
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    let slots = Arc::new(Semaphore::new(HTTP_CONNECTIONS_MAX));
    tokio::pin!(shutdown);
    loop {
        // A slot first: at the cap nothing is accepted until a connection closes.
        let slot = tokio::select! {
            slot = slots.clone().acquire_owned() => match slot {
                Ok(slot) => slot,
                Err(_) => break,
            },
            () = &mut shutdown => break,
        };
        let (stream, peer) = match accept(&listener, &mut shutdown).await {
            Accepted::Connection(stream, peer) => (stream, peer),
            Accepted::Again => continue,
            Accepted::Stop => break,
        };
        // Small JSON-RPC responses go out at once: no Nagle delay.
        let _ = stream.set_nodelay(true);
        let clock = Arc::new(HeadClock::new());
        let service_clock = clock.clone();
        let app = app.clone();
        let service =
            hyper::service::service_fn(move |mut req: http::Request<hyper::body::Incoming>| {
                // The headers are in: off the clock until the response is written.
                let serving = service_clock.serving();
                req.extensions_mut()
                    .insert(axum::extract::ConnectInfo::<SocketAddr>(peer));
                let app = app.clone();
                async move {
                    let response =
                        tower::ServiceExt::oneshot(app, req.map(axum::body::Body::new)).await?;
                    // Back on the clock when hyper is done with the response body.
                    Ok::<_, Infallible>(response.map(|body| Watched {
                        body,
                        _serving: serving,
                    }))
                }
            });
        let conn = hyper::server::conn::http1::Builder::new()
            .max_buf_size(HTTP_HEADER_MAX_BYTES)
            .max_header_size(HTTP_HEADER_MAX_BYTES)
            // The deadline below replaces hyper's header timer, which starts only at the first
            // byte of a request and needs polling to fire.
            .header_read_timeout(None)
            .serve_connection(hyper_util::rt::TokioIo::new(stream), service);
        let conn = graceful.watch(conn);
        tokio::spawn(async move {
            let _slot = slot;
            tokio::select! {
                _ = conn => {}
                // Dropping the connection closes its socket.
                () = clock.expired() => {}
            }
        });
    }
    // Let in-flight requests finish, bounded.
    let _ = tokio::time::timeout(drain, graceful.shutdown()).await;
}

/// An error of one incoming connection (it went away before it was accepted), not of the
/// listener: accept again at once.
fn is_connection_error(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::ConnectionRefused
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::ConnectionReset
            | io::ErrorKind::Interrupted
    )
}

/// One connection's header clock: while no request is being served, the connection must
/// complete a request's headers by `deadline`.
struct HeadClock {
    phase: watch::Sender<Phase>,
}

#[derive(Clone, Copy)]
struct Phase {
    /// Requests being served (hyper serves one at a time per connection).
    serving: usize,
    /// When the connection is closed if no request is being served.
    deadline: Instant,
}

impl HeadClock {
    fn new() -> HeadClock {
        HeadClock {
            phase: watch::Sender::new(Phase {
                serving: 0,
                deadline: Instant::now() + HEADER_DEADLINE,
            }),
        }
    }

    /// Takes the connection off the clock until the returned guard is dropped.
    fn serving(self: &Arc<Self>) -> Serving {
        self.phase.send_modify(|p| p.serving += 1);
        Serving(self.clone())
    }

    /// Resolves when the deadline passes with no request being served.
    async fn expired(&self) {
        let mut phase = self.phase.subscribe();
        loop {
            let Phase { serving, deadline } = *phase.borrow_and_update();
            if serving == 0 && Instant::now() >= deadline {
                return;
            }
            if serving == 0 {
                tokio::select! {
                    () = tokio::time::sleep_until(deadline) => {}
                    _ = phase.changed() => {}
                }
            } else if phase.changed().await.is_err() {
                // Cannot happen (`self` holds the sender); never close a request being served.
                std::future::pending::<()>().await;
            }
        }
    }
}

/// A request being served; dropped when hyper is done with its response (or the request is
/// abandoned), which restarts the clock for the next request's headers.
struct Serving(Arc<HeadClock>);

impl Drop for Serving {
    fn drop(&mut self) {
        self.0.phase.send_modify(|p| {
            p.serving = p.serving.saturating_sub(1);
            p.deadline = Instant::now() + HEADER_DEADLINE;
        });
    }
}

/// A response body that keeps its request off the header clock until hyper drops it; otherwise
/// the body itself (its length is kept, so responses keep their `Content-Length`).
struct Watched<B> {
    body: B,
    _serving: Serving,
}

impl<B: Body + Unpin> Body for Watched<B> {
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}
