//! runread over MCP: protocol 2026-07-28 (`server/discover`, `tools/list`, `tools/call`) and the
//! dated versions with their `initialize` handshake, all served statelessly, every request admitted
//! on its own key ([`guards::Protocols`]). [`server`] is the rmcp handler behind an axum router with the transport
//! [`guards`] and the key-admission layer in front, served by the [`accept`] loop (HTTP/1.1 only,
//! bounded connections, header bytes and header time); [`client`] is runread's own client (used by
//! `runread demo` and `runread read`), and [`reach`] says in words why it could not reach a server.
//!
//! This crate never touches the store: everything goes through `runread_service::Service`.
#![forbid(unsafe_code)]

pub mod accept;
pub mod cimd;
pub mod client;
pub mod configs;
pub mod connector;
pub mod cors;
mod door;
pub mod guards;
mod platform;
pub mod public;
pub mod reach;
pub mod server;
pub mod view;

/// The newest protocol version served, the one runread's own client speaks.
pub const PROTOCOL_VERSION: &str = "2026-07-28";
/// The header that carries the read key.
pub const KEY_HEADER: &str = "x-runread-key";
/// Path of the MCP endpoint.
pub const MCP_PATH: &str = "/mcp";
