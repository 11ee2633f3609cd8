//! A stdio server's process tree, as rmcp's transport sees its child: stopping the server stops
//! everything it started. The server runs under the terminal's supervisor in "owning" mode
//! (`security::sandbox::supervise::install_owning`), leading its own process group. rmcp stops a
//! child by closing stdin, then `signal(SIGTERM)`, then `kill()`, and kills it when the transport
//! is dropped; a plain child would get SIGKILL on the supervisor there, which kills the server
//! but leaves what it started in the background running after hermes. Here:
//! - `signal` goes to the whole process group (the supervisor ignores it; the server and its
//!   jobs get it);
//! - `start_kill`/`kill` and dropping the child ask the supervisor to kill the tree
//!   (`supervise::stop_tree`), the same kill a SIGKILL of hermes triggers;
//! - a server that exits on its own (EOF on stdin) has its tree killed by the supervisor.

use std::io;

use process_wrap::tokio::{ChildWrapper, CommandWrap, CommandWrapper};

use crate::security::sandbox::supervise;

/// The `process_wrap` wrapper that makes rmcp's child a [`SupervisedChild`].
#[derive(Debug, Clone, Copy)]
pub struct OwnTree;

impl CommandWrapper for OwnTree {
    fn pre_spawn(
        &mut self,
        command: &mut tokio::process::Command,
        _: &CommandWrap,
    ) -> io::Result<()> {
        // Leads its group, so the group id is the supervisor's pid.
        command.process_group(0);
        // The tree is stopped through the supervisor; a SIGKILL on drop would pre-empt it.
        command.kill_on_drop(false);
        // Last: the supervisor forks inside pre_exec, after the steps registered before it.
        supervise::install_owning(command);
        Ok(())
    }

    fn wrap_child(
        &mut self,
        child: Box<dyn ChildWrapper>,
        _: &CommandWrap,
    ) -> io::Result<Box<dyn ChildWrapper>> {
        let guard = StopOnDrop(child.id());
        Ok(Box::new(SupervisedChild {
            stop_on_drop: guard,
            inner: child,
        }))
    }
}

/// The supervisor process hermes spawned (see the module doc).
#[derive(Debug)]
pub struct SupervisedChild {
    // Dropped first: the supervisor is asked while `inner` still holds it unreaped.
    stop_on_drop: StopOnDrop,
    inner: Box<dyn ChildWrapper>,
}

impl ChildWrapper for SupervisedChild {
    fn inner(&self) -> &dyn ChildWrapper {
        &*self.inner
    }

    fn inner_mut(&mut self) -> &mut dyn ChildWrapper {
        &mut *self.inner
    }

    fn into_inner(self: Box<Self>) -> Box<dyn ChildWrapper> {
        let SupervisedChild {
            mut stop_on_drop,
            inner,
        } = *self;
        stop_on_drop.0 = None;
        inner
    }

    fn start_kill(&mut self) -> io::Result<()> {
        // `id()` is None once the child was reaped: its pid may belong to someone else then.
        match self.inner.id() {
            Some(pid) => supervise::stop_tree(pid),
            None => Ok(()),
        }
    }

    fn signal(&self, sig: i32) -> io::Result<()> {
        let Some(pid) = self.inner.id() else {
            return Ok(());
        };
        let group = libc::pid_t::try_from(pid).map_err(io::Error::other)?;
        // SAFETY: killpg with a plain group id (the unreaped supervisor's, so still ours).
        if unsafe { libc::killpg(group, sig) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }
}

/// Asks the supervisor to kill the tree when the child is dropped without having been stopped
/// (a connection dropped mid-handshake, a process ending without a graceful close).
#[derive(Debug)]
struct StopOnDrop(Option<u32>);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        if let Some(pid) = self.0
            && unreaped_child(pid)
        {
            let _ = supervise::stop_tree(pid);
        }
    }
}

/// Whether `pid` is still a child of this process not yet reaped (running or a zombie), so
/// the pid cannot have been reused. Reaps nothing (`WNOWAIT`).
fn unreaped_child(pid: u32) -> bool {
    let pid = libc::id_t::from(pid);
    // SAFETY: waitid into a zeroed siginfo we own; WNOWAIT leaves the child as it is.
    unsafe {
        let mut info: libc::siginfo_t = std::mem::zeroed();
        libc::waitid(
            libc::P_PID,
            pid,
            &mut info,
            libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
        ) == 0
    }
}
