//! Just enough HTTP/1.1 for a scrape: one GET at a time, answered and
//! closed. Written on std's listener rather than with a server crate: the
//! agent answers a scrape every few seconds, and the plugin's binary (the
//! same file) must stay small.

use std::io::{self, BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::os::fd::AsFd;
use std::time::Duration;

use nix::poll::{poll, PollFd, PollFlags, PollTimeout};

/// How long a client may take to send its request.
const READ_TIMEOUT: Duration = Duration::from_secs(2);
/// Requests are a line and a few headers.
const MAX_HEAD: usize = 8192;

pub struct Server {
    listener: TcpListener,
}

/// A request: its method and path.
pub struct Request {
    pub method: String,
    pub path: String,
    stream: TcpStream,
}

impl Server {
    pub fn bind(addr: &str) -> io::Result<Self> {
        Ok(Server {
            listener: TcpListener::bind(addr)?,
        })
    }

    /// The next request, waiting at most `wait` for one to arrive.
    pub fn next(&self, wait: Duration) -> io::Result<Option<Request>> {
        let mut fds = [PollFd::new(self.listener.as_fd(), PollFlags::POLLIN)];
        let ms = u16::try_from(wait.as_millis()).unwrap_or(u16::MAX);
        if poll(&mut fds, PollTimeout::from(ms))? == 0 {
            return Ok(None);
        }
        let (stream, _) = self.listener.accept()?;
        stream.set_read_timeout(Some(READ_TIMEOUT))?;
        let mut reader = BufReader::new(stream.try_clone()?);
        let mut line = String::new();
        reader.read_line(&mut line)?;
        let mut parts = line.split_whitespace();
        let (method, path) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
        let request = Request {
            method: method.to_string(),
            path: path.split('?').next().unwrap_or("").to_string(),
            stream,
        };
        // Read the headers to their end, so closing does not reset the connection.
        let mut read = line.len();
        loop {
            let mut header = String::new();
            let n = reader.read_line(&mut header)?;
            read += n;
            if n == 0 || header == "\r\n" || header == "\n" || read > MAX_HEAD {
                break;
            }
        }
        Ok(Some(request))
    }
}

impl Request {
    pub fn respond(mut self, status: u16, content_type: &str, body: &str) -> io::Result<()> {
        let reason = match status {
            200 => "OK",
            404 => "Not Found",
            405 => "Method Not Allowed",
            503 => "Service Unavailable",
            _ => "Internal Server Error",
        };
        write!(
            self.stream,
            "HTTP/1.1 {status} {reason}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )?;
        self.stream.flush()
    }
}
