//! A loopback port that stays closed for as long as the test holds it.
//!
//! Binding a listener, reading its port and dropping it races with every other test in the
//! binary: the kernel may hand the freed port to the next mock server that binds port 0, and
//! the "unreachable" request then lands on that mock (and eats its script). A socket that is
//! bound but never listens keeps the port reserved (no other bind gets it) while a connection to
//! it is refused, so the port cannot be reused until the guard is dropped.

use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// Holds the port; connections to [`ClosedPort::addr`] are refused until it is dropped.
pub struct ClosedPort {
    _socket: OwnedFd,
    addr: SocketAddr,
}

impl ClosedPort {
    pub fn new() -> ClosedPort {
        // SAFETY: plain socket calls on a descriptor we own; every return value is checked.
        unsafe {
            let fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
            assert!(fd >= 0, "socket: {}", std::io::Error::last_os_error());
            let socket = OwnedFd::from_raw_fd(fd);
            let mut sin: libc::sockaddr_in = std::mem::zeroed();
            sin.sin_family = libc::AF_INET as libc::sa_family_t;
            sin.sin_addr.s_addr = u32::from(Ipv4Addr::LOCALHOST).to_be();
            sin.sin_port = 0;
            let len = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
            let rc = libc::bind(
                socket.as_raw_fd(),
                (&raw const sin).cast::<libc::sockaddr>(),
                len,
            );
            assert_eq!(rc, 0, "bind: {}", std::io::Error::last_os_error());
            let mut bound: libc::sockaddr_in = std::mem::zeroed();
            let mut bound_len = len;
            let rc = libc::getsockname(
                socket.as_raw_fd(),
                (&raw mut bound).cast::<libc::sockaddr>(),
                &mut bound_len,
            );
            assert_eq!(rc, 0, "getsockname: {}", std::io::Error::last_os_error());
            let port = u16::from_be(bound.sin_port);
            ClosedPort {
                _socket: socket,
                addr: SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::LOCALHOST, port)),
            }
        }
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
}
