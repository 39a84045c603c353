//! `:` commands.

use super::App;
use crate::command::{self, Command, When};
use crate::effects::TravelTo;
use crate::registry::Opens;
use crate::screen::Open;
use crate::text::clean;
use quotatop_analysis::now_of;

const DAY_MS: i64 = 86_400_000;

impl App {
    pub(super) fn run_command(&mut self, line: &str) {
        let cmd = match command::parse_with(line, self.screens.entries()) {
            Ok(c) => c,
            Err(e) => return self.flash_error(e.to_string()),
        };
        match cmd {
            Command::Open(kind) => self.switch_root(kind),
            Command::Help => self.help = true,
            Command::Messages => self.messages_open = true,
            Command::Sort(name) => self.sort_named(&name),
            Command::Quit => self.quit = true,
            Command::Theme(name) => self.set_theme(&name),
            Command::At(when) => self.travel_at(when),
            Command::Live => self.go_live("live data"),
            Command::Queue(name) => self.command_queue(name),
            Command::Share(name) => self.command_share(name),
            Command::Job(needle) => self.command_job(needle),
        }
    }

    /// `:at`: travel to a time, or live when it is now or later.
    fn travel_at(&mut self, when: When) {
        // "30m" is ago by this machine's clock (as "recorded … ago" is); a time of day
        // is read on the data's own clock (as the PAST badge and job times are).
        let live_taken = self.live_taken();
        let (to, live) = match when {
            When::Ago(d) => {
                let t = (self.clock)().saturating_sub(d);
                (TravelTo::At(t), t >= live_taken)
            }
            When::At(_) | When::TimeOfDay(_) => {
                let live_data = self
                    .data
                    .queue(self.queue.as_deref())
                    .and_then(|(q, _)| now_of(q))
                    .unwrap_or(live_taken);
                let t = match when {
                    // Today on the data's clock (UTC days).
                    When::TimeOfDay(tod) => live_data - live_data.rem_euclid(DAY_MS) + tod,
                    When::At(t) | When::Ago(t) => t,
                };
                // Times are shown to the second: a time typed to the second covers it.
                let t = if t % 1000 == 0 { t + 999 } else { t };
                (TravelTo::AtData(t), t >= live_data)
            }
        };
        if live {
            self.go_live("live: that time is now or later");
        } else {
            let r = self.travel.go(to, self.history());
            self.after_travel(r);
        }
    }

    fn command_queue(&mut self, name: String) {
        // A queue's key (`NAME@SOURCE`), or its name (the first source's with it).
        let found = self.shown().queues().iter().find(|q| q.key() == name);
        let found = found.or_else(|| self.shown().queues().iter().find(|q| q.name == name));
        if let Some(key) = found.map(|q| q.key()) {
            self.switch_queue(key);
        } else {
            self.flash_error(format!("no queue {}", clean(&name)));
        }
    }

    fn command_share(&mut self, name: String) {
        let Some((q, _)) = self.shown().queue(self.queue.as_deref()) else {
            return self.flash_error("no data yet");
        };
        if q.shares.iter().any(|s| s.name == name) {
            let queue = q.key();
            self.stack.clear();
            self.open(Open::Share { queue, share: name });
        } else {
            self.flash_error(format!(
                "no share {} in queue {}",
                clean(&name),
                clean(&q.key())
            ));
        }
    }

    /// `:job`: by id, by name, else by the one id ending so.
    fn command_job(&mut self, needle: String) {
        let Some((q, _)) = self.shown().queue(self.queue.as_deref()) else {
            return self.flash_error("no data yet");
        };
        let found = q
            .jobs
            .iter()
            .find(|j| j.job.id == needle)
            .or_else(|| q.jobs.iter().find(|j| j.job.name == needle))
            .or_else(|| {
                let mut m = q.jobs.iter().filter(|j| j.job.id.ends_with(&needle));
                let first = m.next();
                if m.next().is_some() { None } else { first }
            });
        match found {
            Some(j) => {
                let open = Open::Job {
                    queue: q.key(),
                    id: j.job.id.clone(),
                };
                self.open(open);
            }
            None => self.flash_error(format!(
                "no job {} in queue {}",
                clean(&needle),
                clean(&q.key())
            )),
        }
    }
}

impl App {
    /// Shows queue `name` on the same kind of screen (Jobs stays Jobs); screens of one share
    /// or job of the old queue close.
    pub(super) fn switch_queue(&mut self, name: String) {
        let kind = self.stack.first().map(|s| s.kind());
        self.set_queue(name);
        if let Some(k) = kind
            && self
                .screens
                .get(k)
                .is_some_and(|e| matches!(e.opens, Opens::Fresh(_)))
        {
            self.switch_root(k);
        }
    }
}
