//! Keys: the dialog, help and prompts take them first; otherwise they become [`Action`]s.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::App;
use crate::effects::Effect;
use crate::input::Input;
use crate::keymap::{Action, Mode};
use crate::list::ListState;
use crate::priority::{PriorityDialog, Reply};
use crate::text::clean;
use crate::theme;

impl App {
    pub(super) fn on_key(&mut self, key: KeyEvent) {
        // Ctrl-C in a dialog (priority, terminate, requeue, bulk) cancels the dialog, never the
        // console, asking first when a change is half-typed: the second Ctrl-C drops it, any
        // other key goes back to it. Everywhere else (help, `:messages`, a prompt) it quits.
        let ctrl_c =
            key.code == KeyCode::Char('c') && key.modifiers.contains(KeyModifiers::CONTROL);
        let asked = std::mem::take(&mut self.quit_asked);
        if ctrl_c && (self.dialog.is_some() || self.acting.is_some()) {
            let half_typed = self.dialog.as_ref().is_some_and(PriorityDialog::half_typed)
                || self
                    .acting
                    .as_ref()
                    .is_some_and(crate::job_act::JobAct::half_typed);
            if half_typed && !asked {
                self.quit_asked = true;
                self.flash_info(format!(
                    "a change is half-typed: ctrl-c again closes the dialog and drops it, any \
                     other key goes back to it ({} quits the console once it is closed)",
                    self.keymap.first_key(Action::Quit)
                ));
            } else {
                // From any step: a change already sent still reports its result.
                self.dialog = None;
                self.acting = None;
                self.flash_info("dialog closed");
            }
            return;
        }
        if ctrl_c {
            self.quit = true;
            return;
        }
        if asked {
            self.flash = None;
        }
        if self.job_act_key(&key) {
            return;
        }
        if let Some(dialog) = &mut self.dialog {
            let action = self.keymap.action(Mode::Dialog, &key);
            match dialog.on_key(action, &key, &self.data) {
                Reply::Stay => {}
                Reply::Close => self.dialog = None,
                Reply::Submit(req) => self.effects.push(Effect::ApplyChange(req)),
            }
            return;
        }
        if self.messages_open {
            if let Some(Action::Back | Action::Help | Action::Quit | Action::Enter) =
                self.keymap.action(Mode::Normal, &key)
            {
                self.messages_open = false;
            }
            return;
        }
        if self.help {
            match self.keymap.action(Mode::Normal, &key) {
                Some(Action::Back | Action::Help | Action::Quit) => self.help = false,
                Some(Action::Down) => self.help_scroll.move_by(1),
                Some(Action::Up) => self.help_scroll.move_by(-1),
                Some(Action::PageDown) => self.help_scroll.page(true),
                Some(Action::PageUp) => self.help_scroll.page(false),
                Some(Action::Top) => self.help_scroll.top(),
                Some(Action::Bottom) => self.help_scroll.bottom(),
                _ => {}
            }
            return;
        }
        if self.input.is_typing() {
            self.on_prompt_key(key);
            return;
        }
        self.flash = None;
        let action = self
            .keymap
            .action_on(Mode::Normal, &key, self.current().own_actions());
        let (ctx, screen) = self.split();
        if let Some(effects) = screen.own_key(&key, action, &ctx) {
            self.effects.extend(effects);
            return;
        }
        if let Some(action) = action {
            self.on_action(action);
        }
    }

    fn on_prompt_key(&mut self, key: KeyEvent) {
        match self.keymap.action(Mode::Prompt, &key) {
            Some(Action::Confirm) => {
                match std::mem::take(&mut self.input) {
                    Input::Command(line) => self.run_command(line.value()),
                    Input::Filter(_) | Input::Normal => {}
                }
                return;
            }
            Some(Action::Cancel) => {
                if matches!(self.input, Input::Filter(_)) {
                    self.with_list(|l| l.filter.text.clear());
                }
                self.input = Input::Normal;
                return;
            }
            _ => {}
        }
        let Some(text) = self.input.text_mut() else {
            return;
        };
        // Backspace on an empty prompt leaves it, as in vi.
        if key.code == KeyCode::Backspace && text.value().is_empty() {
            self.input = Input::Normal;
            return;
        }
        if crate::field::edit(text, &key, 200) != crate::field::Edit::Changed {
            return;
        }
        if let Input::Filter(t) = &self.input {
            let t = t.value().to_string();
            self.with_list(|l| l.set_filter(t));
        }
    }

    fn on_action(&mut self, action: Action) {
        match action {
            Action::Quit => self.quit = true,
            Action::Help => self.open_help(),
            Action::CommandMode => self.input = Input::Command(Default::default()),
            Action::FilterMode => self.filter_mode(),
            Action::Back => self.back(),
            Action::Enter => {
                let open = self.current().enter(self.shown(), self.queue.as_deref());
                if let Some(open) = open {
                    self.open(open);
                }
            }
            Action::Up => self.with_nav(|l| l.move_by(-1)),
            Action::Down => self.with_nav(|l| l.move_by(1)),
            Action::PageUp => self.with_nav(|l| l.page(false)),
            Action::PageDown => self.with_nav(|l| l.page(true)),
            Action::Top => self.with_nav(|l| l.top()),
            Action::Bottom => self.with_nav(|l| l.bottom()),
            Action::SortNext | Action::SortPrev | Action::SortReverse => self.sort(action),
            Action::NextPane | Action::Wide | Action::Expand | Action::ByType => {
                let (ctx, screen) = self.split();
                let effects = screen.on_action(action, &ctx);
                self.effects.extend(effects);
            }
            Action::Open(kind) => self.switch_root(kind),
            Action::NextQueue => self.next_queue(),
            Action::NextTheme => self.next_theme(),
            Action::Priority => {
                if !self.open_job_act(crate::job_act::What::Priority) {
                    self.open_priority_dialog();
                }
            }
            Action::Terminate => {
                self.open_job_act(crate::job_act::What::Terminate);
            }
            Action::Requeue => {
                self.open_job_act(crate::job_act::What::Requeue);
            }
            Action::Mark | Action::MarkAll | Action::ClearMarks => self.on_mark(action),
            Action::Older => {
                let live_taken = self.live_taken();
                let history = self.history();
                let r = self.travel.older(live_taken, history);
                self.after_travel(r);
            }
            Action::Newer => {
                let r = self.travel.newer(self.history());
                self.after_travel(r);
            }
            Action::Live => self.go_live("live data"),
            // A screen's own (the log pane's), taken by it before they get here.
            Action::Follow
            | Action::NextMatch
            | Action::PrevMatch
            | Action::ScrollLeft
            | Action::ScrollRight => {}
            Action::Confirm | Action::Cancel | Action::NextField | Action::PrevField => {}
        }
    }

    fn open_help(&mut self) {
        self.help = true;
        // Its length at the width it is drawn in is set by each draw (it wraps).
        let lines = crate::help::lines(
            &self.keymap,
            self.screens.entries(),
            &self.theme,
            usize::MAX,
        )
        .len();
        self.help_scroll = ListState::text_pane(lines);
    }

    /// `/`: the list's filter in the prompt, to edit.
    fn filter_mode(&mut self) {
        if let Some(list) = self.current().list_ref() {
            self.input = Input::Filter(crate::field::text(&list.filter.text));
        } else {
            self.flash_error("this screen has no filter");
        }
    }

    /// Back clears a filter first, then leaves the screen.
    fn back(&mut self) {
        if self
            .current()
            .list_ref()
            .is_some_and(|l| !l.filter.text.is_empty())
        {
            self.with_list(|l| l.filter.text.clear());
        } else if self.stack.pop().is_some() {
            self.refresh_all();
        }
    }

    fn sort(&mut self, action: Action) {
        let columns = self.current().sort_columns();
        if columns.is_empty() {
            self.flash_error("this screen has a fixed order");
            return;
        }
        self.with_list(|l| match action {
            Action::SortNext => l.sort_next(columns.len()),
            Action::SortPrev => l.sort_prev(columns.len()),
            _ => l.sort_reverse(),
        });
    }

    /// `:sort NAME`: the current list sorted by the column of that name (or the one it
    /// begins); the sorted one again: reversed.
    pub(super) fn sort_named(&mut self, name: &str) {
        let columns = self.current().sort_columns();
        if columns.is_empty() {
            return self.flash_error("this screen has a fixed order");
        }
        let name = name.trim().to_lowercase();
        let at = columns.iter().position(|c| *c == name).or_else(|| {
            let mut m = columns
                .iter()
                .enumerate()
                .filter(|(_, c)| c.starts_with(&name));
            match (m.next(), m.next()) {
                (Some((i, _)), None) => Some(i),
                _ => None,
            }
        });
        match at {
            Some(i) => self.with_list(|l| l.sort_by(i)),
            None => self.flash_error(format!(
                "no sort column {} here: {}",
                clean(&name),
                columns.join(", ")
            )),
        }
    }

    /// The next queue of the snapshot, round.
    fn next_queue(&mut self) {
        let names: Vec<String> = self.shown().queues().iter().map(|q| q.key()).collect();
        match names.as_slice() {
            [] => self.flash_error("no queue yet"),
            [only] => self.flash_info(format!(
                "only one queue: {} (--queue or `queues` in config.toml adds more)",
                clean(only)
            )),
            _ => {
                let at = self
                    .queue
                    .as_ref()
                    .and_then(|q| names.iter().position(|n| n == q))
                    .unwrap_or(0);
                self.switch_queue(names[(at + 1) % names.len()].clone());
            }
        }
    }

    /// The next built-in theme, round.
    fn next_theme(&mut self) {
        let names: Vec<&str> = theme::built_in_names().collect();
        let at = names
            .iter()
            .position(|n| *n == self.theme.name)
            .map_or(0, |i| i + 1);
        self.set_theme(names[at % names.len()]);
    }

    fn open_priority_dialog(&mut self) {
        if self.status.read_only {
            return self.flash_error(format!(
                "read-only mode: priority changes are disabled (read-only is set by {})",
                self.status
                    .read_only_from
                    .as_deref()
                    .unwrap_or("--read-only or read_only = true")
            ));
        }
        if let Some(why) = &self.status.config_broken {
            return self.flash_error(format!(
                "priority changes are refused until the config file is fixed (a broken file never \
                 loosens policy): {why}"
            ));
        }
        if self.travel.past().is_some() {
            return self.flash_error(format!(
                "you are looking at the past: {} returns to live data, where priorities can change",
                self.keymap.first_key(Action::Live)
            ));
        }
        let Some((queue, id)) = self
            .current()
            .selected_job(&self.data, self.queue.as_deref())
        else {
            return self.flash_error("select a job first (Jobs, a share's queue or a job)");
        };
        let Some(job) = self.data.job(Some(&queue), &id) else {
            return self.flash_error("that job is no longer in the data");
        };
        if job.job.status.is_terminal() {
            return self.flash_error(format!(
                "{} has already finished ({}): its priority cannot change",
                clean(&job.job.name),
                job.job.status.as_str()
            ));
        }
        self.dialog = Some(PriorityDialog::new(
            &queue,
            job,
            std::sync::Arc::clone(&self.door),
        ));
    }
}
