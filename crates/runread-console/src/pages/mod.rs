//! The console's pages, rendered on the server with maud (every value escaped). No inline
//! script or style: the Content-Security-Policy allows only `/assets/console.{js,css}`.
//!
//! One module per page; `layout` holds what more than one of them uses.

mod audit;
mod connections;
mod granted;
mod grants;
mod join_connection;
mod layout;
mod logged_out;
mod new_reader;
mod owner_error;
mod readers;
mod refusal;
mod requests;
mod run;
mod runs;
mod secrets;

pub(crate) use audit::audit;
pub(crate) use connections::connections;
pub(crate) use granted::granted;
pub(crate) use grants::grants;
pub(crate) use join_connection::join_connection;
pub(crate) use layout::{enc, html};
pub(crate) use logged_out::logged_out;
pub(crate) use new_reader::{AskedGrant, new_reader};
pub(crate) use owner_error::owner_error;
pub(crate) use readers::{ReaderChange, readers};
pub(crate) use refusal::refusal;
pub(crate) use requests::requests;
pub(crate) use run::run;
pub(crate) use runs::{runs, runs_table};
pub(crate) use secrets::secrets;
