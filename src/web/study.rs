//! Where a finished chain trace goes: printed for `--trace`, kept for the
//! debug pages (`--debug-pages`, [`crate::web::debug`]), or both. An app
//! with no [`Study`] traces nothing.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};

use http::StatusCode;

use crate::ops::log;
use crate::web::trace::{Step, Trace};

/// How many walks the debug pages keep, newest first.
pub const WALKS_KEPT: usize = 20;

/// Where finished traces go.
pub(crate) struct Study {
    pub(crate) print: bool,
    pub(crate) walks: Option<Arc<Walks>>,
}

impl Study {
    /// The chain answered `status`: close `t` and send it where it goes.
    pub(crate) fn keep(&self, mut t: Box<Trace>, status: StatusCode) {
        t.finish(status);
        if self.print {
            print(&t);
        }
        if let Some(walks) = &self.walks {
            walks.record(&t);
        }
    }
}

/// `--trace`: the request's walk of its chain, then the log lines held
/// behind it.
fn print(t: &Trace) {
    log::stdout().line(|buf| {
        for line in t.text().lines() {
            buf.extend_from_slice(b"[trace] ");
            buf.extend_from_slice(line.as_bytes());
            buf.push(b'\n');
        }
        buf.extend_from_slice(t.held());
    });
}

/// One request's walk, as kept for the pages.
pub(crate) struct Walk {
    /// Counts up from 1 in the order the walks ended.
    pub(crate) id: u64,
    pub(crate) steps: Vec<Step>,
    pub(crate) names: Vec<Option<&'static str>>,
}

/// The last [`WALKS_KEPT`] walks, newest last.
#[derive(Default)]
pub(crate) struct Walks {
    kept: Mutex<(u64, VecDeque<Arc<Walk>>)>,
}

impl Walks {
    /// Keep the finished trace `t`, unless it is a request for a debug page
    /// (the page's own polling would push every other walk out).
    pub(crate) fn record(&self, t: &Trace) {
        let head = t.steps().first().map_or("", |s| s.text.as_str());
        if head
            .split(' ')
            .nth(1)
            .is_some_and(|p| p.starts_with("/debug/"))
        {
            return;
        }
        let mut kept = self.kept.lock().unwrap_or_else(PoisonError::into_inner);
        kept.0 += 1;
        let walk = Walk {
            id: kept.0,
            steps: t.steps().to_vec(),
            names: t.names().to_vec(),
        };
        kept.1.push_back(Arc::new(walk));
        if kept.1.len() > WALKS_KEPT {
            kept.1.pop_front();
        }
    }

    /// The walks kept with an id above `after`, newest first.
    pub(crate) fn since(&self, after: u64) -> Vec<Arc<Walk>> {
        let kept = self.kept.lock().unwrap_or_else(PoisonError::into_inner);
        kept.1
            .iter()
            .rev()
            .filter(|w| w.id > after)
            .cloned()
            .collect()
    }
}
