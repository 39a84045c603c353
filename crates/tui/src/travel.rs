//! Time travel: a recorded snapshot shown instead of the live data, which keeps updating
//! underneath (its sparklines are never fed from the past). Steps (`[`, `]`) go one recorded
//! snapshot at a time, each from the one before, so steps pressed while one is loading wait
//! their turn; a jump (`:at`) replaces whatever is under way (the runner cancels it).

use super::data::Data;
use super::effects::{Effect, TravelResult, TravelTo};
use super::footer::Flash;
use quotatop_analysis::now_of;
use quotatop_model::Millis;

/// The recorded snapshot shown.
pub struct Past {
    pub data: Data,
    /// 1-based position among the stored snapshots, and how many there are.
    pub position: usize,
    pub total: usize,
}

impl Past {
    pub fn taken_at(&self) -> Millis {
        self.data.snapshot.as_ref().map_or(0, |s| s.taken_at)
    }

    /// The service's time in the snapshot (what the PAST badge shows).
    pub fn data_at(&self, queue: Option<&str>) -> Millis {
        self.data
            .queue(queue)
            .and_then(|(q, _)| now_of(q))
            .unwrap_or_else(|| self.taken_at())
    }
}

/// Time travel's state: the past shown, and the step under way.
#[derive(Default)]
pub struct Travel {
    past: Option<Past>,
    /// A recorded snapshot is being loaded.
    pending: bool,
    /// Steps pressed while one was loading (older > 0, newer < 0), taken one by one after it.
    backlog: i32,
}

/// What a time-travel operation asks of the app.
#[derive(Default)]
pub struct Reply {
    pub effect: Option<Effect>,
    pub flash: Option<Flash>,
    /// The time shown changed: screens refresh and reload what they show.
    pub moved: bool,
}

impl Reply {
    fn info(text: impl Into<String>) -> Self {
        Self {
            flash: Some(Flash {
                text: text.into(),
                error: false,
            }),
            ..Self::default()
        }
    }

    fn error(text: impl Into<String>) -> Self {
        Self {
            flash: Some(Flash {
                text: text.into(),
                error: true,
            }),
            ..Self::default()
        }
    }
}

impl Travel {
    pub fn past(&self) -> Option<&Past> {
        self.past.as_ref()
    }

    pub fn past_mut(&mut self) -> Option<&mut Past> {
        self.past.as_mut()
    }

    /// The data screens show: the past one while travelling, else `live`.
    pub fn shown<'a>(&'a self, live: &'a Data) -> &'a Data {
        self.past.as_ref().map_or(live, |p| &p.data)
    }

    /// Starts a step or a jump, unless there is no history.
    pub fn go(&mut self, to: TravelTo, history: bool) -> Reply {
        if !history {
            return Reply::error(
                "time travel needs history: this console keeps no journal (--no-journal, or it \
                 could not be opened)",
            );
        }
        if self.pending {
            // Keep the keypress: a step waits for the one loading; a jump replaces them.
            match to {
                TravelTo::Older(_) => self.backlog += 1,
                TravelTo::Newer(_) => self.backlog -= 1,
                TravelTo::At(_) | TravelTo::AtData(_) => {
                    self.backlog = 0;
                    return Reply {
                        effect: Some(Effect::Travel(to)),
                        ..Reply::default()
                    };
                }
            }
            return Reply::default();
        }
        self.pending = true;
        Reply {
            effect: Some(Effect::Travel(to)),
            ..Reply::default()
        }
    }

    /// One recorded snapshot back, from the one shown (live: from `live_taken`).
    pub fn older(&mut self, live_taken: Millis, history: bool) -> Reply {
        let from = self.past.as_ref().map_or(live_taken, Past::taken_at);
        self.go(TravelTo::Older(from), history)
    }

    /// One recorded snapshot forward.
    pub fn newer(&mut self, history: bool) -> Reply {
        match &self.past {
            Some(p) => {
                let from = p.taken_at();
                self.go(TravelTo::Newer(from), history)
            }
            None => Reply::info("already live: [ steps back through the recorded snapshots"),
        }
    }

    /// Back to the live data; `remember` is called with the past data before it goes.
    pub fn go_live(&mut self, why: &str, remember: &mut dyn FnMut(&Data)) -> Reply {
        self.backlog = 0;
        let Some(p) = self.past.take() else {
            return Reply::info("already live");
        };
        remember(&p.data);
        Reply {
            moved: true,
            ..Reply::info(why)
        }
    }

    /// A step's answer. `remember` is called with the data shown before the past changes;
    /// `live` lends the journal's preemption record and the loop rule to the past.
    pub fn on_result(
        &mut self,
        r: TravelResult,
        live: &Data,
        queue: Option<&str>,
        history: bool,
        remember: &mut dyn FnMut(&Data),
    ) -> Reply {
        self.pending = false;
        match r.result {
            Ok(Some(frame)) => {
                remember(self.shown(live));
                let frame = *frame;
                let data = Data::past(
                    frame.snapshot,
                    live.loop_rule.clone(),
                    live.recorded.clone(),
                    frame.usage,
                );
                let past = Past {
                    data,
                    position: frame.position,
                    total: frame.total,
                };
                let data_at = past.data_at(queue);
                let before = match r.to {
                    TravelTo::At(t) => past.taken_at() > t,
                    TravelTo::AtData(t) => data_at > t,
                    _ => false,
                };
                self.past = Some(past);
                let mut reply = if before {
                    let oldest = super::text::date_time(Some(data_at));
                    Reply::info(format!(
                        "the journal goes back only to {oldest}: its oldest snapshot is shown"
                    ))
                } else {
                    Reply::default()
                };
                reply.moved = true;
                // The next step pressed meanwhile.
                let next = if self.backlog > 0 {
                    self.backlog -= 1;
                    Some(self.older(0, history))
                } else if self.backlog < 0 {
                    self.backlog += 1;
                    Some(self.newer(history))
                } else {
                    None
                };
                if let Some(next) = next {
                    reply.effect = next.effect;
                    reply.flash = next.flash.or(reply.flash);
                }
                reply
            }
            Ok(None) => {
                // Nothing further that way: the rest of the presses would go nowhere either.
                self.backlog = 0;
                match r.to {
                    TravelTo::Older(_) if self.past.is_some() => {
                        Reply::info("this is the oldest recorded snapshot the journal keeps")
                    }
                    TravelTo::Older(_) | TravelTo::At(_) | TravelTo::AtData(_) => {
                        Reply::info("no recorded snapshot yet: the journal stores them as it goes")
                    }
                    TravelTo::Newer(_) => {
                        self.go_live("live again: no newer recorded snapshot", remember)
                    }
                }
            }
            Err(e) => {
                self.backlog = 0;
                Reply::error(format!("time travel: {e}"))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::effects::{HistoryError, PastFrame};
    use quotatop_analysis::LoopRule;
    use quotatop_model::Snapshot;

    fn frame(taken_at: Millis, to: TravelTo) -> TravelResult {
        TravelResult {
            to,
            result: Ok(Some(Box::new(PastFrame {
                snapshot: Snapshot {
                    taken_at,
                    ..Snapshot::default()
                },
                position: 1,
                total: 2,
                usage: Default::default(),
            }))),
        }
    }

    #[test]
    fn steps_pressed_while_one_loads_follow_it_one_by_one() {
        let live = Data::new(LoopRule::default());
        let mut t = Travel::default();
        let first = t.older(10_000, true);
        assert_eq!(
            first.effect.map(|e| format!("{e:?}")),
            Some("Travel(Older(10000))".into())
        );
        // Two more presses wait for it.
        assert!(t.older(10_000, true).effect.is_none());
        assert!(t.older(10_000, true).effect.is_none());
        let landed = t.on_result(
            frame(9_000, TravelTo::Older(10_000)),
            &live,
            None,
            true,
            &mut |_| {},
        );
        assert!(landed.moved);
        assert_eq!(t.past().map(Past::taken_at), Some(9_000));
        assert!(matches!(
            landed.effect,
            Some(Effect::Travel(TravelTo::Older(9_000)))
        ));
        let landed = t.on_result(
            frame(8_000, TravelTo::Older(9_000)),
            &live,
            None,
            true,
            &mut |_| {},
        );
        assert!(matches!(
            landed.effect,
            Some(Effect::Travel(TravelTo::Older(8_000)))
        ));
        let landed = t.on_result(
            frame(7_000, TravelTo::Older(8_000)),
            &live,
            None,
            true,
            &mut |_| {},
        );
        assert!(landed.effect.is_none(), "the backlog is used up");
    }

    #[test]
    fn a_jump_replaces_the_steps_under_way() {
        let live = Data::new(LoopRule::default());
        let mut t = Travel::default();
        t.older(10_000, true);
        t.older(10_000, true);
        let jump = t.go(TravelTo::At(5_000), true);
        assert!(matches!(
            jump.effect,
            Some(Effect::Travel(TravelTo::At(5_000)))
        ));
        let landed = t.on_result(
            frame(5_000, TravelTo::At(5_000)),
            &live,
            None,
            true,
            &mut |_| {},
        );
        assert!(landed.effect.is_none(), "no step left after a jump");
    }

    #[test]
    fn without_history_or_on_error_it_says_why() {
        let live = Data::new(LoopRule::default());
        let mut t = Travel::default();
        let r = t.older(10_000, false);
        assert!(r.effect.is_none() && r.flash.is_some_and(|f| f.error));
        t.older(10_000, true);
        let failed = TravelResult {
            to: TravelTo::Older(10_000),
            result: Err(HistoryError::Unavailable("disk gone".into())),
        };
        let r = t.on_result(failed, &live, None, true, &mut |_| {});
        assert_eq!(
            r.flash.map(|f| f.text),
            Some("time travel: disk gone".into())
        );
        assert!(t.past().is_none());
    }

    #[test]
    fn going_live_remembers_the_past_selection_first() {
        let live = Data::new(LoopRule::default());
        let mut t = Travel::default();
        t.older(10_000, true);
        t.on_result(
            frame(9_000, TravelTo::Older(10_000)),
            &live,
            None,
            true,
            &mut |_| {},
        );
        let mut remembered = None;
        let r = t.go_live("live data", &mut |d| {
            remembered = d.snapshot.as_ref().map(|s| s.taken_at)
        });
        assert!(r.moved && t.past().is_none());
        assert_eq!(remembered, Some(9_000));
        assert!(!t.go_live("live data", &mut |_| {}).moved);
    }
}
