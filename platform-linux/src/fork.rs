//! Objects a forked child inherits (G-FORK).
//!
//! A child made by `fork()` has a copy of its parent's memory and one thread.
//! A session, poller, ticket, ring state or datastore made before the fork
//! names the parent's resources in the driver, or a thread the child lacks. So
//! each records the pid that made it: in another process every call on it is
//! refused with [`ForkedChild`], and its drop forgets it, touching nothing of
//! the parent's. The check is one `getpid()` a call.

use std::fmt;

use crate::error::LinuxError;

/// The process that made an object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Owner {
    pid: u32,
}

impl Owner {
    /// The calling process.
    pub fn here() -> Owner {
        Owner { pid: std::process::id() }
    }

    /// The pid that made the object.
    pub fn pid(self) -> u32 {
        self.pid
    }

    /// `Err` naming `object`, its maker and this process, when this is not its maker.
    pub fn check(self, object: &'static str) -> Result<(), ForkedChild> {
        let this = std::process::id();
        if this == self.pid {
            Ok(())
        } else {
            Err(ForkedChild { object, creator: self.pid, this })
        }
    }

    /// Whether this process is not the one that made the object.
    pub fn inherited(self) -> bool {
        std::process::id() != self.pid
    }
}

/// A call on an object in a child forked after it was made: refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ForkedChild {
    /// What the object is, such as `"session"`.
    pub object: &'static str,
    /// The pid that made it.
    pub creator: u32,
    /// This process's pid.
    pub this: u32,
}

impl ForkedChild {
    /// The same refusal as a [`LinuxError`] of `call` on `target`, this value its cause.
    pub fn into_linux(self, call: &'static str, target: impl Into<String>) -> LinuxError {
        LinuxError::new(call, target, self)
    }
}

impl fmt::Display for ForkedChild {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the {} was made by pid {}, and this is pid {}, a child forked after it: what it holds is the \
             parent's, so this process neither uses nor releases it (make a new {} here)",
            self.object, self.creator, self.this, self.object
        )
    }
}

impl std::error::Error for ForkedChild {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_owner_is_this_process_and_a_stranger_is_refused_naming_both_pids() {
        let me = Owner::here();
        assert_eq!(me.pid(), std::process::id());
        assert_eq!(me.check("poller"), Ok(()));
        assert!(!me.inherited());
        let other = Owner { pid: me.pid().wrapping_add(1) };
        assert!(other.inherited());
        let e = other.check("session").unwrap_err();
        assert_eq!(e, ForkedChild { object: "session", creator: other.pid(), this: me.pid() });
        let text = e.into_linux("inference", "/dev/neuron0").to_string();
        assert!(
            text.starts_with(&format!(
                "inference on /dev/neuron0 failed: the session was made by pid {}, and this is pid {}, a child forked",
                other.pid(),
                me.pid()
            )),
            "{text}"
        );
    }
}
