//! How loud an event is, and the one place events leave the core: the platform's
//! sink, and the `log` facade (Linux) or defmt (a controller) when those features
//! are on.
//!
//! Each layer has its own event type ([`ExecEvent`](crate::exec::ExecEvent),
//! [`DmaEvent`](crate::dma::DmaEvent), [`DgeEvent`](crate::dge::DgeEvent)) and
//! emits it through a [`EventSink<E>`](crate::hal::EventSink) of that type, so no
//! layer needs to know the others' events; [`event::Event`](crate::event::Event)
//! gathers them for a platform that wants one stream.

use core::fmt;

use crate::hal::EventSink;
use crate::nq::EngineSet;

/// How loud an event is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Level {
    /// Trace-level facts (a tensor completed, a custom notification).
    Debug,
    /// Worth knowing (a correctable ECC error).
    Info,
    /// Something is slow or odd but not failed.
    Warn,
    /// Something failed.
    Error,
}

/// What the defmt route needs of an event: `defmt::Format` with the `defmt`
/// feature, nothing without it.
#[cfg(feature = "defmt")]
pub trait DefmtFormat: defmt::Format {}
#[cfg(feature = "defmt")]
impl<T: defmt::Format + ?Sized> DefmtFormat for T {}

/// What the defmt route needs of an event: `defmt::Format` with the `defmt`
/// feature, nothing without it.
#[cfg(not(feature = "defmt"))]
pub trait DefmtFormat {}
#[cfg(not(feature = "defmt"))]
impl<T: ?Sized> DefmtFormat for T {}

/// A layer's event: a small `Copy` value with a level, a machine-friendly kind
/// and a message (`Display`, the seed's own text where it gives one).
pub trait Traced: fmt::Display + DefmtFormat {
    /// How loud the event is.
    fn level(&self) -> Level;
    /// A short machine-friendly name of the event's kind (`"barrier_wait"`).
    fn kind(&self) -> &'static str;
    /// The core the event is about, if one (the request's core index).
    fn core(&self) -> Option<u8> {
        None
    }
    /// The engines the event is about.
    fn engines(&self) -> EngineSet {
        EngineSet::EMPTY
    }
    /// The message without the core's name (`Display` with it).
    fn fmt_message(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// A [`Traced`] event's [`fmt_message`](Traced::fmt_message), as `Display`:
/// what the `log` route writes for an event of a core.
pub struct MessageOf<'a, E>(pub &'a E);

impl<E: Traced> fmt::Display for MessageOf<'_, E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt_message(f)
    }
}

/// Deliver an event to the sink, and to `log`/`defmt` when those features are on
/// (a `log` record carries the event's [`kind`](Traced::kind) as its `kind`
/// key-value).
#[inline]
pub(crate) fn emit<E: Traced, S: EventSink<E> + ?Sized>(sink: &mut S, event: E) {
    #[cfg(feature = "log")]
    {
        let lvl = match event.level() {
            Level::Debug => log::Level::Debug,
            Level::Info => log::Level::Info,
            Level::Warn => log::Level::Warn,
            Level::Error => log::Level::Error,
        };
        // An event of a core: the message without `core N: `, and the core
        // and its engines (a bit mask) as key-values, for the platform's
        // logger to name them its own way (the device's core numbers).
        match event.core() {
            Some(core) => log::log!(
                lvl,
                kind = event.kind(), core = core, engines = event.engines().bits();
                "{}", MessageOf(&event)
            ),
            None => log::log!(lvl, kind = event.kind(); "{}", event),
        }
    }
    #[cfg(feature = "defmt")]
    {
        match event.level() {
            Level::Debug => defmt::debug!("{}", event),
            Level::Info => defmt::info!("{}", event),
            Level::Warn => defmt::warn!("{}", event),
            Level::Error => defmt::error!("{}", event),
        }
    }
    sink.event(&event);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dma::{Direction, DmaEvent};
    use crate::exec::ExecEvent;
    use crate::nq::Engine;

    /// Through the trait, as `emit` sees an event.
    fn seen<E: Traced>(e: &E) -> (Option<u8>, EngineSet, String, String) {
        (e.core(), e.engines(), MessageOf(e).to_string(), e.to_string())
    }

    #[test]
    fn an_event_of_a_core_gives_its_core_engines_and_message_without_the_core() {
        let e = ExecEvent::UnexpectedNotification { core: 1, engine: Engine::Dve, debug_hint: 2, subtype: 9 };
        let msg = "Received unexpected notification on engine DVE. Debug Hint: 2, Notification Type: 9";
        assert_eq!(seen(&e), (Some(1), EngineSet::from(Engine::Dve), msg.into(), format!("core 1: {msg}")));
        let e = ExecEvent::HangOnCompute { core: 0 };
        assert_eq!((seen(&e).0, seen(&e).1), (Some(0), EngineSet::EMPTY));
        // The any-layer event gives the same, so a report of `Event`s can name the core.
        let e = crate::event::Event::from(ExecEvent::UnexpectedNotification {
            core: 1,
            engine: Engine::Dve,
            debug_hint: 2,
            subtype: 9,
        });
        assert_eq!(seen(&e), (Some(1), EngineSet::from(Engine::Dve), msg.into(), format!("core 1: {msg}")));
    }

    #[test]
    fn an_event_of_no_core_keeps_the_defaults_and_its_whole_text() {
        let e = ExecEvent::XuCompleteFailed;
        assert_eq!(seen(&e), (None, EngineSet::EMPTY, e.to_string(), e.to_string()));
        let d = DmaEvent::Lowered { dir: Direction::Tx, ndesc: 3, depth: 8 };
        assert!(!d.to_string().is_empty());
        assert_eq!(seen(&d), (None, EngineSet::EMPTY, d.to_string(), d.to_string()));
        let d = crate::event::Event::from(d);
        assert_eq!(seen(&d), (None, EngineSet::EMPTY, d.to_string(), d.to_string()));
    }
}
