//! Fault injection: what can go wrong, as composable values.
//!
//! In the manner of smoltcp's `FaultInjector` wrapping a healthy `phy`, a healthy
//! device program is built first and each [`Fault`] then rewrites it: it drops
//! or duplicates a record, removes an END, adds error-ring records, bursts or
//! corrupts entries, or sets a status line the host-side proxies read. Faults
//! compose: `nan:core=0` with `hang:core=1,engine=PE` is a NaN on one core and a
//! hang on the other.
//!
//! The textual form is the tool's `--inject SPEC` contract:
//!
//! ```text
//! hang:core=C,engine=E               drop:core=C,engine=E,record=start|end[,overflow]
//! dup-start:core=C,engine=E[,overflow]   unexpected:core=C,engine=E,subtype=N
//! nan:core=C  transient:core=C  seq-error:core=C  ecc-ue:core=C  ecc-ce:core=C
//! hbm-ue:core=C  hbm-repairable:core=C  barrier-delay:secs=S  barrier-fail:core=C
//! netproxy-fail:core=C  overflow:core=C,engine=E  corrupt:core=C,engine=E,count=N
//! ```
//!
//! `E` is an engine name in any case, PE, ACT, POOL, DVE or SP, or an index
//! 0..4; `C` is 0 or 1. [`Fault::parse`] names the bad part of a malformed spec;
//! `Display` prints the canonical spec back.

use core::fmt;

use nrt_core::nq::Engine;

/// Which record a `drop` fault drops.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RecordKind {
    /// The START record.
    Start,
    /// The END record.
    End,
}

/// One injectable fault.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// The engine starts and never ends.
    Hang {
        /// Physical core.
        core: u8,
        /// Engine.
        engine: Engine,
    },
    /// The device drops the engine's START or END; with `overflow` it raises INTC
    /// cause bit 29 as a queue overflow would.
    Drop {
        /// Physical core.
        core: u8,
        /// Engine.
        engine: Engine,
        /// The record dropped.
        record: RecordKind,
        /// Raise INTC bit 29.
        overflow: bool,
    },
    /// The engine's START is written twice; with `overflow`, INTC bit 29 is raised first.
    DupStart {
        /// Physical core.
        core: u8,
        /// Engine.
        engine: Engine,
        /// Raise INTC bit 29.
        overflow: bool,
    },
    /// A record of subtype `subtype` on the engine's ring, mid-run.
    Unexpected {
        /// Physical core.
        core: u8,
        /// Engine.
        engine: Engine,
        /// The raw subtype written at `+6`.
        subtype: u16,
    },
    /// A NUMERICAL record, a NaN, on the core's error ring.
    Nan {
        /// Physical core.
        core: u8,
    },
    /// A TRANSIENT record on the error ring.
    Transient {
        /// Physical core.
        core: u8,
    },
    /// A SW_SEQUENCER record on the error ring.
    SeqError {
        /// Physical core.
        core: u8,
    },
    /// An uncorrectable ECC record on the error ring.
    EccUe {
        /// Physical core.
        core: u8,
    },
    /// A correctable ECC record on the error ring.
    EccCe {
        /// Physical core.
        core: u8,
    },
    /// An unrepairable HBM UE: the core's engines stall without END and the HBM
    /// probe reports 1201.
    HbmUe {
        /// Physical core.
        core: u8,
    },
    /// A repairable HBM UE: as `HbmUe`, the probe reports 1205.
    HbmRepairable {
        /// Physical core.
        core: u8,
    },
    /// The collectives barrier of every core clears `secs` seconds after kickoff.
    BarrierDelay {
        /// Seconds.
        secs: u32,
    },
    /// The barrier proxy of the core fails, 1200.
    BarrierFail {
        /// Physical core.
        core: u8,
    },
    /// The network proxy of the core fails, 1206.
    NetproxyFail {
        /// Physical core.
        core: u8,
    },
    /// A real ring overflow: the engine bursts more records than its ring holds
    /// just before its END, in one device instant; the device drops what does not
    /// fit, the END among them, and raises INTC bit 29.
    Overflow {
        /// Physical core.
        core: u8,
        /// Engine.
        engine: Engine,
    },
    /// `count` random 16-byte entries on the engine's ring at random times of its
    /// run, phase-stamped so that the host sees them.
    Corrupt {
        /// Physical core.
        core: u8,
        /// Engine.
        engine: Engine,
        /// How many.
        count: u32,
    },
}

/// The fault names in the order of the contract, defined in `nrt_abi::sim`: a
/// label a host may check an `--inject` spec's name against.
pub use nrt_abi::sim::FAULT_NAMES;

/// The most entries one `corrupt` fault writes.
pub const MAX_CORRUPT: u32 = 4096;

/// A malformed fault spec; the message names the bad part.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FaultParseError(pub String);

impl fmt::Display for FaultParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for FaultParseError {}

/// The parameters a spec named, before they are checked against the fault.
struct Params<'a> {
    name: &'a str,
    spec: &'a str,
    pairs: Vec<(&'a str, Option<&'a str>)>,
    used: Vec<bool>,
}

impl<'a> Params<'a> {
    fn err(&self, msg: String) -> FaultParseError {
        FaultParseError(format!("bad fault spec '{}': {msg}", self.spec))
    }

    fn take(&mut self, key: &str) -> Option<Option<&'a str>> {
        let i = self.pairs.iter().position(|(k, _)| *k == key)?;
        if let Some(u) = self.used.get_mut(i) {
            *u = true;
        }
        self.pairs.get(i).map(|(_, v)| *v)
    }

    fn value(&mut self, key: &str, what: &str) -> Result<&'a str, FaultParseError> {
        match self.take(key) {
            Some(Some(v)) => Ok(v),
            Some(None) => Err(self.err(format!("'{key}' needs a value ({key}={what})"))),
            None => Err(self.err(format!("missing '{key}={what}' for '{}'", self.name))),
        }
    }

    fn core(&mut self) -> Result<u8, FaultParseError> {
        let v = self.value("core", "0|1")?;
        match v {
            "0" => Ok(0),
            "1" => Ok(1),
            _ => Err(self.err(format!("bad core '{v}' (expected 0 or 1)"))),
        }
    }

    fn engine(&mut self) -> Result<Engine, FaultParseError> {
        let v = self.value("engine", "PE|ACT|POOL|DVE|SP|0..4")?;
        Engine::parse(v).ok_or_else(|| self.err(format!("bad engine '{v}' (expected PE, ACT, POOL, DVE, SP or 0..4)")))
    }

    fn number(&mut self, key: &str, what: &str, max: u64) -> Result<u64, FaultParseError> {
        let v = self.value(key, what)?;
        let n = match v.strip_prefix("0x").or_else(|| v.strip_prefix("0X")) {
            Some(hex) => u64::from_str_radix(hex, 16).ok(),
            None => v.parse::<u64>().ok(),
        };
        match n {
            Some(n) if n <= max => Ok(n),
            _ => Err(self.err(format!("bad {key} '{v}' (expected a number 0..={max})"))),
        }
    }

    fn flag(&mut self, key: &str) -> Result<bool, FaultParseError> {
        match self.take(key) {
            None => Ok(false),
            Some(None) => Ok(true),
            Some(Some(v)) => Err(self.err(format!("'{key}' is a flag and takes no value (got '{key}={v}')"))),
        }
    }

    fn finish(&self) -> Result<(), FaultParseError> {
        for ((k, _), used) in self.pairs.iter().zip(&self.used) {
            if !used {
                return Err(self.err(format!("unknown parameter '{k}' for '{}'", self.name)));
            }
        }
        Ok(())
    }
}

impl Fault {
    /// Parse an `--inject` spec.
    pub fn parse(spec: &str) -> Result<Fault, FaultParseError> {
        let spec = spec.trim();
        let (name, rest) = match spec.split_once(':') {
            Some((n, r)) => (n, Some(r)),
            None => (spec, None),
        };
        if !FAULT_NAMES.contains(&name) {
            return Err(FaultParseError(format!(
                "bad fault spec '{spec}': unknown fault '{name}' (expected one of {})",
                FAULT_NAMES.join(", ")
            )));
        }
        let mut pairs = Vec::new();
        if let Some(rest) = rest {
            for part in rest.split(',') {
                let part = part.trim();
                let (k, v) = match part.split_once('=') {
                    Some((k, v)) => (k.trim(), Some(v.trim())),
                    None => (part, None),
                };
                if k.is_empty() {
                    return Err(FaultParseError(format!("bad fault spec '{spec}': empty parameter")));
                }
                if pairs.iter().any(|(p, _)| *p == k) {
                    return Err(FaultParseError(format!("bad fault spec '{spec}': '{k}' given twice")));
                }
                pairs.push((k, v));
            }
        }
        let used = vec![false; pairs.len()];
        let mut p = Params { name, spec, pairs, used };
        let f = match name {
            "hang" => Fault::Hang { core: p.core()?, engine: p.engine()? },
            "drop" => {
                let core = p.core()?;
                let engine = p.engine()?;
                let record = match p.value("record", "start|end")? {
                    "start" => RecordKind::Start,
                    "end" => RecordKind::End,
                    other => return Err(p.err(format!("bad record '{other}' (expected start or end)"))),
                };
                Fault::Drop { core, engine, record, overflow: p.flag("overflow")? }
            }
            "dup-start" => Fault::DupStart { core: p.core()?, engine: p.engine()?, overflow: p.flag("overflow")? },
            "unexpected" => {
                let core = p.core()?;
                let engine = p.engine()?;
                let subtype = p.number("subtype", "N", u64::from(u16::MAX))? as u16;
                Fault::Unexpected { core, engine, subtype }
            }
            "nan" => Fault::Nan { core: p.core()? },
            "transient" => Fault::Transient { core: p.core()? },
            "seq-error" => Fault::SeqError { core: p.core()? },
            "ecc-ue" => Fault::EccUe { core: p.core()? },
            "ecc-ce" => Fault::EccCe { core: p.core()? },
            "hbm-ue" => Fault::HbmUe { core: p.core()? },
            "hbm-repairable" => Fault::HbmRepairable { core: p.core()? },
            "barrier-delay" => Fault::BarrierDelay { secs: p.number("secs", "S", 1_000_000)? as u32 },
            "barrier-fail" => Fault::BarrierFail { core: p.core()? },
            "netproxy-fail" => Fault::NetproxyFail { core: p.core()? },
            "overflow" => Fault::Overflow { core: p.core()?, engine: p.engine()? },
            "corrupt" => {
                let core = p.core()?;
                let engine = p.engine()?;
                let count = p.number("count", "N", u64::from(MAX_CORRUPT))? as u32;
                Fault::Corrupt { core, engine, count }
            }
            _ => return Err(p.err(format!("unknown fault '{name}'"))),
        };
        p.finish()?;
        Ok(f)
    }

    /// The physical core the fault is on; `None` for the device-wide barrier delay.
    pub fn core(&self) -> Option<u8> {
        match *self {
            Fault::Hang { core, .. }
            | Fault::Drop { core, .. }
            | Fault::DupStart { core, .. }
            | Fault::Unexpected { core, .. }
            | Fault::Nan { core }
            | Fault::Transient { core }
            | Fault::SeqError { core }
            | Fault::EccUe { core }
            | Fault::EccCe { core }
            | Fault::HbmUe { core }
            | Fault::HbmRepairable { core }
            | Fault::BarrierFail { core }
            | Fault::NetproxyFail { core }
            | Fault::Overflow { core, .. }
            | Fault::Corrupt { core, .. } => Some(core),
            Fault::BarrierDelay { .. } => None,
        }
    }
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ov = |o: bool| if o { ",overflow" } else { "" };
        match *self {
            Fault::Hang { core, engine } => write!(f, "hang:core={core},engine={}", engine.name()),
            Fault::Drop { core, engine, record, overflow } => write!(
                f,
                "drop:core={core},engine={},record={}{}",
                engine.name(),
                match record {
                    RecordKind::Start => "start",
                    RecordKind::End => "end",
                },
                ov(overflow)
            ),
            Fault::DupStart { core, engine, overflow } => {
                write!(f, "dup-start:core={core},engine={}{}", engine.name(), ov(overflow))
            }
            Fault::Unexpected { core, engine, subtype } => {
                write!(f, "unexpected:core={core},engine={},subtype={subtype}", engine.name())
            }
            Fault::Nan { core } => write!(f, "nan:core={core}"),
            Fault::Transient { core } => write!(f, "transient:core={core}"),
            Fault::SeqError { core } => write!(f, "seq-error:core={core}"),
            Fault::EccUe { core } => write!(f, "ecc-ue:core={core}"),
            Fault::EccCe { core } => write!(f, "ecc-ce:core={core}"),
            Fault::HbmUe { core } => write!(f, "hbm-ue:core={core}"),
            Fault::HbmRepairable { core } => write!(f, "hbm-repairable:core={core}"),
            Fault::BarrierDelay { secs } => write!(f, "barrier-delay:secs={secs}"),
            Fault::BarrierFail { core } => write!(f, "barrier-fail:core={core}"),
            Fault::NetproxyFail { core } => write!(f, "netproxy-fail:core={core}"),
            Fault::Overflow { core, engine } => write!(f, "overflow:core={core},engine={}", engine.name()),
            Fault::Corrupt { core, engine, count } => {
                write!(f, "corrupt:core={core},engine={},count={count}", engine.name())
            }
        }
    }
}

impl core::str::FromStr for Fault {
    type Err = FaultParseError;
    fn from_str(s: &str) -> Result<Fault, FaultParseError> {
        Fault::parse(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_contract_form_parses_and_round_trips() {
        for spec in [
            "hang:core=0,engine=PE",
            "drop:core=1,engine=DVE,record=end,overflow",
            "drop:core=0,engine=ACT,record=start",
            "dup-start:core=0,engine=SP",
            "dup-start:core=1,engine=POOL,overflow",
            "unexpected:core=0,engine=ACT,subtype=9",
            "nan:core=0",
            "transient:core=1",
            "seq-error:core=0",
            "ecc-ue:core=0",
            "ecc-ce:core=1",
            "hbm-ue:core=0",
            "hbm-repairable:core=1",
            "barrier-delay:secs=300",
            "barrier-fail:core=1",
            "netproxy-fail:core=0",
            "overflow:core=0,engine=POOL",
            "corrupt:core=0,engine=DVE,count=8",
        ] {
            let f = Fault::parse(spec).unwrap();
            assert_eq!(f.to_string(), spec);
        }
        assert_eq!(Fault::parse("hang:core=0,engine=3").unwrap(), Fault::Hang { core: 0, engine: Engine::Dve });
        assert_eq!(Fault::parse("hang:engine=pool,core=1").unwrap(), Fault::Hang { core: 1, engine: Engine::Pool });
        assert_eq!(
            Fault::parse("unexpected:core=0,engine=0,subtype=0x10").unwrap(),
            Fault::Unexpected { core: 0, engine: Engine::Pe, subtype: 16 }
        );
    }

    #[test]
    fn errors_name_the_bad_part() {
        let cases = [
            ("bogus", "unknown fault 'bogus'"),
            ("hang:core=2,engine=PE", "bad core '2'"),
            ("hang:core=0,engine=GPU", "bad engine 'GPU'"),
            ("hang:core=0", "missing 'engine="),
            ("hang:core=0,engine=PE,speed=3", "unknown parameter 'speed'"),
            ("drop:core=0,engine=PE,record=middle", "bad record 'middle'"),
            ("drop:core=0,engine=PE,record=end,overflow=yes", "'overflow' is a flag"),
            ("unexpected:core=0,engine=PE,subtype=70000", "bad subtype '70000'"),
            ("corrupt:core=0,engine=PE,count=x", "bad count 'x'"),
            ("nan:core=0,core=1", "'core' given twice"),
            ("nan:core", "'core' needs a value"),
            ("nan:,", "empty parameter"),
        ];
        for (spec, want) in cases {
            let e = Fault::parse(spec).unwrap_err().to_string();
            assert!(e.contains(want), "{spec}: {e}");
        }
    }
}
