//! Navigation: the stack of screens over the overview, and keeping their rows and selections
//! in step with the data shown.

use super::App;
use crate::data::Data;
use crate::job_detail::JobDetail;
use crate::jobs::Jobs;
use crate::list::ListState;
use crate::overview::Overview;
use crate::registry::Opens;
use crate::screen::{Kind, Load, Open, Screen};
use crate::share::ShareScreen;

impl App {
    pub(super) fn remember_all(&mut self) {
        let data = self.travel.shown(&self.data);
        self.root.remember(data);
        for s in &mut self.stack {
            s.remember(data);
        }
    }

    /// Before new live data: each screen keeps what it keeps then (see
    /// [`Screen::remember_before_data`]).
    pub(super) fn remember_before_data(&mut self) {
        let data = self.travel.shown(&self.data);
        self.root.remember_before_data(data);
        for s in &mut self.stack {
            s.remember_before_data(data);
        }
    }

    pub(super) fn refresh_all(&mut self) {
        let data = self.travel.shown(&self.data);
        self.root.refresh(data, self.queue.as_deref());
        for s in &mut self.stack {
            s.refresh(data, self.queue.as_deref());
        }
        self.take_screens_work();
    }

    /// The work the screens' refresh asked for (rows made off the UI thread).
    fn take_screens_work(&mut self) {
        self.effects.extend(self.root.take_work());
        for s in &mut self.stack {
            self.effects.extend(s.take_work());
        }
    }

    /// Changes the current screen's list (filter or sort) and recomputes its rows.
    pub(super) fn with_list(&mut self, f: impl FnOnce(&mut ListState)) {
        let queue = self.queue.clone();
        let screen: &mut (dyn Screen + Send) = match self.stack.last_mut() {
            Some(s) => s.as_mut(),
            None => &mut self.root,
        };
        let data = self.travel.shown(&self.data);
        screen.remember(data);
        if let Some(list) = screen.list() {
            f(list);
        }
        screen.refresh(data, queue.as_deref());
        self.take_screens_work();
    }

    pub(super) fn with_nav(&mut self, f: impl FnOnce(&mut ListState)) {
        let data = self.travel.shown(&self.data);
        let screen: &mut (dyn Screen + Send) = match self.stack.last_mut() {
            Some(s) => s.as_mut(),
            None => &mut self.root,
        };
        if let Some(list) = screen.nav_list() {
            f(list);
        }
        screen.after_nav(data);
    }

    pub(super) fn set_queue(&mut self, name: String) {
        self.queue = Some(name);
        self.stack.clear();
        self.refresh_all();
    }

    /// Opens the screen `kind` as its key or `:` command does (the registry says how): the
    /// root alone, or a fresh one over it.
    pub(super) fn switch_root(&mut self, kind: Kind) {
        if let Some(Opens::OnJob(build)) = self.screens.get(kind).map(|e| e.opens) {
            let selected = self
                .current()
                .selected_job(self.travel.shown(&self.data), self.queue.as_deref());
            return match selected {
                Some((queue, id)) => self.push(build(queue, id)),
                None => self.flash_error("select a job first (Jobs, Preemptions or a job)"),
            };
        }
        self.stack.clear();
        match self.screens.get(kind).map(|e| e.opens) {
            Some(Opens::Fresh(build)) => self.push(build()),
            Some(Opens::Root | Opens::FromAnother | Opens::OnJob(_)) | None => self.refresh_all(),
        }
    }

    pub(super) fn push(&mut self, mut screen: Box<dyn Screen + Send>) {
        screen.refresh(self.travel.shown(&self.data), self.queue.as_deref());
        self.stack.push(screen);
        self.load_current(Load::Opened);
    }

    pub(super) fn open(&mut self, open: Open) {
        match open {
            Open::Share { queue, share } => {
                self.queue = Some(queue.clone());
                self.push(Box::new(ShareScreen::new(queue, share)));
            }
            Open::Job { queue, id } => self.push(Box::new(JobDetail::new(queue, id))),
            Open::Jobs { queue } => {
                self.queue = Some(queue);
                self.push(Box::new(Jobs::new()));
            }
        }
    }
}

/// Notes every screen's selection in `data` before it changes.
pub(super) fn remember(root: &mut Overview, stack: &mut [Box<dyn Screen + Send>], data: &Data) {
    root.remember(data);
    for s in stack {
        s.remember(data);
    }
}
