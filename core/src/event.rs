//! Structured events: the umbrella over each layer's own event type.
//!
//! Core never prints. Each layer emits its own small `Copy` event type through a
//! sink of that type ([`hal::EventSink<E>`](crate::hal::EventSink)): the harvest
//! an [`ExecEvent`], the descriptor handoff a [`DmaEvent`], the DGE gate a
//! [`DgeEvent`]. No layer imports this module; it imports them, so a platform that
//! wants every event in one stream can take an [`Event`] (each layer's type
//! converts into it with `From`) and implement its sink once:
//!
//! ```
//! use nrt_core::event::Event;
//! use nrt_core::hal::EventSink;
//!
//! struct Recorder(Vec<Event>);
//!
//! impl<E: Copy + Into<Event>> EventSink<E> for Recorder {
//!     fn event(&mut self, event: &E) {
//!         self.0.push((*event).into());
//!     }
//! }
//! ```
//!
//! `level`, `kind` and `Display` are the layer's own: wrapping changes none of
//! them.

use core::fmt;

use crate::dge::DgeEvent;
use crate::dma::DmaEvent;
use crate::exec::ExecEvent;
use crate::trace::{Level, Traced};

/// One event of any layer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum Event {
    /// A harvest (completion-engine) event.
    Exec(ExecEvent),
    /// A descriptor-handoff event.
    Dma(DmaEvent),
    /// A DGE priority-gate event.
    Dge(DgeEvent),
}

impl Event {
    /// How loud the event is.
    pub fn level(&self) -> Level {
        match self {
            Event::Exec(e) => e.level(),
            Event::Dma(e) => e.level(),
            Event::Dge(e) => e.level(),
        }
    }

    /// A short machine-friendly name of the event's kind (`"barrier_wait"`).
    pub fn kind(&self) -> &'static str {
        match self {
            Event::Exec(e) => e.kind(),
            Event::Dma(e) => e.kind(),
            Event::Dge(e) => e.kind(),
        }
    }

    /// The harvest event, when it is one.
    pub fn exec(&self) -> Option<&ExecEvent> {
        match self {
            Event::Exec(e) => Some(e),
            _ => None,
        }
    }
}

impl Traced for Event {
    fn level(&self) -> Level {
        Event::level(self)
    }
    fn kind(&self) -> &'static str {
        Event::kind(self)
    }
    fn core(&self) -> Option<u8> {
        match self {
            Event::Exec(e) => e.core(),
            Event::Dma(e) => e.core(),
            Event::Dge(e) => e.core(),
        }
    }
    fn engines(&self) -> crate::nq::EngineSet {
        match self {
            Event::Exec(e) => e.engines(),
            Event::Dma(e) => e.engines(),
            Event::Dge(e) => e.engines(),
        }
    }
    fn fmt_message(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Event::Exec(e) => e.fmt_message(f),
            Event::Dma(e) => e.fmt_message(f),
            Event::Dge(e) => e.fmt_message(f),
        }
    }
}

impl fmt::Display for Event {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Event::Exec(e) => fmt::Display::fmt(e, f),
            Event::Dma(e) => fmt::Display::fmt(e, f),
            Event::Dge(e) => fmt::Display::fmt(e, f),
        }
    }
}

impl From<ExecEvent> for Event {
    fn from(e: ExecEvent) -> Event {
        Event::Exec(e)
    }
}

impl From<DmaEvent> for Event {
    fn from(e: DmaEvent) -> Event {
        Event::Dma(e)
    }
}

impl From<DgeEvent> for Event {
    fn from(e: DgeEvent) -> Event {
        Event::Dge(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dma::Direction;
    use crate::status::NrtStatus;

    #[test]
    fn wrapping_keeps_each_layers_level_kind_and_text() {
        let exec = ExecEvent::XuFatalShutdown { status: NrtStatus::Timeout };
        let dma = DmaEvent::Lowered { dir: Direction::Tx, ndesc: 3, depth: 8 };
        let dge = DgeEvent::ClassMapSet { classes: 2 };
        for (e, level, kind, text) in [
            (Event::from(exec), exec.level(), exec.kind(), exec.to_string()),
            (Event::from(dma), dma.level(), dma.kind(), dma.to_string()),
            (Event::from(dge), dge.level(), dge.kind(), dge.to_string()),
        ] {
            assert_eq!((e.level(), e.kind(), e.to_string()), (level, kind, text));
        }
        assert_eq!(Event::from(exec).exec(), Some(&exec));
        assert_eq!(Event::from(dma).exec(), None);
    }
}
