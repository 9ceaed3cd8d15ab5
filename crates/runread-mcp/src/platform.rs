//! The MCP crate's platform module: how standard input is read for the stdio transport. Every
//! OS-specific call of the crate is here.

/// Standard input as the stdio transport reads it. On Unix a pipe (how MCP clients launch a
/// server) is read without a blocking thread, so that a stop (a signal) never waits on a read that
/// only the client's end of the pipe could end; anything else (a terminal, a file), and every
/// input elsewhere, through tokio's reader, which holds a blocking thread.
pub(crate) fn stdin_reader() -> Box<dyn tokio::io::AsyncRead + Send + Unpin> {
    #[cfg(unix)]
    {
        use std::os::fd::AsFd;
        let pipe = std::io::stdin()
            .as_fd()
            .try_clone_to_owned()
            .ok()
            .and_then(|fd| tokio::net::unix::pipe::Receiver::from_owned_fd(fd).ok());
        if let Some(pipe) = pipe {
            return Box::new(pipe);
        }
    }
    Box::new(tokio::io::stdin())
}
