//! The screen registry: one [`ScreenEntry`] per screen — its [`Kind`], how it opens, the key
//! that opens it, its `:` command and help line — listed by `screens!` in `lib.rs`. Key
//! dispatch, the key map, `:` commands, the `?` help, the footer hints and navigation all read
//! it; none keeps a list of screens of its own.
//!
//! A new screen is two files: its own (a type implementing [`Screen`], its `ENTRY`, and the
//! work it loads, see [`super::effects::ScreenWork`]) and its name in the `screens!` list in
//! `lib.rs` (plus, when its work reads a service of its own, that service given to
//! [`Screens::serving`] where the console is started: the only way a screen's work gets a
//! service). Tests add screens of their own with [`Screens::with`] and
//! [`super::App::with_screens`].

use super::effects::ScreenServices;
use super::keymap::{Action, Binding, Mode};
use super::screen::{Kind, Screen};

/// How a screen is opened.
#[derive(Clone, Copy)]
pub enum Opens {
    /// The screen at the bottom of the navigation stack, always there; opening it closes the
    /// others.
    Root,
    /// By its key or `:` command: a fresh one over the root (the others close). It stays the
    /// screen shown when the queue switches.
    Fresh(fn() -> Box<dyn Screen + Send>),
    /// Only from another screen (Enter), or by a command naming what it shows (`:share NAME`).
    FromAnother,
    /// By its key, on the job selected on the screen shown (queue, job id): over that screen,
    /// so Esc goes back to it.
    OnJob(fn(String, String) -> Box<dyn Screen + Send>),
}

/// The key that opens a screen.
#[derive(Debug, Clone, Copy)]
pub struct ScreenKey {
    /// The action's name in the config file's `[keys]` section.
    pub name: &'static str,
    /// Default keys.
    pub keys: &'static [&'static str],
    /// The `?` help line.
    pub description: &'static str,
    /// Footer label (neighbours with the same label share one: `<1-4>screens`).
    pub hint: Option<&'static str>,
}

/// The `:` command that opens a screen.
#[derive(Debug, Clone, Copy)]
pub struct ScreenCommand {
    /// Names accepted; help lists all but the one-letter ones.
    pub names: &'static [&'static str],
    /// The help line.
    pub help: &'static str,
}

/// One screen.
#[derive(Clone, Copy)]
pub struct ScreenEntry {
    pub kind: Kind,
    pub opens: Opens,
    pub key: Option<ScreenKey>,
    pub command: Option<ScreenCommand>,
}

/// A fresh screen of type `S`, for [`Opens::Fresh`].
pub fn fresh<S: Screen + Send + Default + 'static>() -> Box<dyn Screen + Send> {
    Box::new(S::default())
}

/// Declares the console's screens, in the order their keys and commands are listed: each
/// `module: Name` is a module (its file in `crates/tui/src/`) holding the screen and its
/// `pub const ENTRY: ScreenEntry`, and the screen's kind, `Kind::Name`. Invoked once, in
/// `lib.rs`; makes [`BUILTIN`] and the built-in kinds.
macro_rules! screens {
    ($($module:ident: $kind:ident),+ $(,)?) => {
        $(pub mod $module;)+

        /// The built-in screens' entries (see `screens!`).
        const SCREENS: &[registry::ScreenEntry] = &[$($module::ENTRY),+];

        /// The built-in screens' kinds, named as in `screens!`.
        #[allow(non_upper_case_globals)]
        impl screen::Kind {
            $(pub const $kind: screen::Kind = screen::Kind::new(stringify!($kind));)+
        }
    };
}
pub(crate) use screens;

/// The built-in screens, in the order their keys and commands are listed.
pub const BUILTIN: &[ScreenEntry] = crate::SCREENS;

/// Why an entry cannot join the registry: it would make a key name, a command or a kind
/// ambiguous.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RegistryError {
    #[error("screen {0:?} is already registered")]
    Kind(Kind),
    #[error("screen {kind:?}: the key name `{name}` is already another screen's")]
    KeyName { kind: Kind, name: &'static str },
    #[error("screen {kind:?}: the command `:{name}` is already another screen's")]
    Command { kind: Kind, name: &'static str },
}

/// The screens a console knows: [`BUILTIN`], and any added ([`Screens::with`]), with the
/// services their own work reads ([`Screens::serving`]).
#[derive(Clone)]
pub struct Screens {
    entries: Vec<ScreenEntry>,
    services: ScreenServices,
}

impl Default for Screens {
    fn default() -> Self {
        Self::builtin()
    }
}

impl Screens {
    pub fn builtin() -> Self {
        Self {
            entries: BUILTIN.to_vec(),
            services: ScreenServices::default(),
        }
    }

    /// These screens, their work able to read `service` (one per type, usually an
    /// `Arc<dyn TheScreensTrait>` built outside the console).
    pub fn serving<S: std::any::Any + Send + Sync>(mut self, service: S) -> Self {
        self.services = self.services.with(service);
        self
    }

    pub fn services(&self) -> &ScreenServices {
        &self.services
    }

    /// These screens and `entry` (listed last), unless it clashes with one of them.
    pub fn with(mut self, entry: ScreenEntry) -> Result<Self, RegistryError> {
        check(&self.entries, &entry)?;
        self.entries.push(entry);
        Ok(self)
    }

    pub fn entries(&self) -> &[ScreenEntry] {
        &self.entries
    }

    pub fn get(&self, kind: Kind) -> Option<&ScreenEntry> {
        get(&self.entries, kind)
    }
}

/// Whether `entry` can join `entries`.
pub fn check(entries: &[ScreenEntry], entry: &ScreenEntry) -> Result<(), RegistryError> {
    let kind = entry.kind;
    if entries.iter().any(|e| e.kind == kind) {
        return Err(RegistryError::Kind(kind));
    }
    if let Some(k) = entry.key
        && entries
            .iter()
            .any(|e| e.key.is_some_and(|o| o.name == k.name))
    {
        return Err(RegistryError::KeyName { kind, name: k.name });
    }
    for name in entry.command.iter().flat_map(|c| c.names) {
        if by_command(entries, name).is_some() {
            return Err(RegistryError::Command { kind, name });
        }
    }
    Ok(())
}

pub fn get(entries: &[ScreenEntry], kind: Kind) -> Option<&ScreenEntry> {
    entries.iter().find(|e| e.kind == kind)
}

/// The screen a `:` command names.
pub fn by_command(entries: &[ScreenEntry], name: &str) -> Option<Kind> {
    entries
        .iter()
        .find(|e| e.command.is_some_and(|c| c.names.contains(&name)))
        .map(|e| e.kind)
}

/// The key binding that opens the screen of `entry`, if it has a key.
pub const fn binding(entry: &ScreenEntry) -> Option<Binding> {
    match entry.key {
        Some(k) => Some(Binding {
            action: Action::Open(entry.kind),
            name: k.name,
            mode: Mode::Normal,
            keys: k.keys,
            description: k.description,
            hint: k.hint,
        }),
        None => None,
    }
}

/// The key bindings that open screens, in registry order.
pub fn bindings(entries: &[ScreenEntry]) -> impl Iterator<Item = Binding> + '_ {
    entries.iter().filter_map(binding)
}

/// The help lines of the screens' `:` commands: `jobs | 2` and what it opens.
pub fn command_help(entries: &[ScreenEntry]) -> impl Iterator<Item = (String, &'static str)> + '_ {
    entries.iter().filter_map(|e| {
        let c = e.command?;
        let listed: Vec<&str> = c
            .names
            .iter()
            .copied()
            .filter(|n| n.chars().count() > 1 || n.chars().all(|ch| ch.is_ascii_digit()))
            .collect();
        Some((listed.join(" | "), c.help))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_builtin_entry_could_join_the_others() {
        for (i, e) in BUILTIN.iter().enumerate() {
            let others: Vec<ScreenEntry> = BUILTIN
                .iter()
                .enumerate()
                .filter(|(j, _)| *j != i)
                .map(|(_, e)| *e)
                .collect();
            assert_eq!(check(&others, e), Ok(()), "{:?}", e.kind);
        }
    }

    #[test]
    fn a_clashing_entry_is_refused_and_says_with_what() {
        let mut e = crate::jobs::ENTRY;
        assert_eq!(
            Screens::builtin().with(e).err(),
            Some(RegistryError::Kind(Kind::Jobs))
        );
        e.kind = Kind::new("Other");
        assert_eq!(
            Screens::builtin().with(e).err(),
            Some(RegistryError::KeyName {
                kind: Kind::new("Other"),
                name: "jobs"
            })
        );
        e.key = None;
        assert_eq!(
            Screens::builtin().with(e).err(),
            Some(RegistryError::Command {
                kind: Kind::new("Other"),
                name: "jobs"
            })
        );
        e.command = None;
        assert!(Screens::builtin().with(e).is_ok());
    }

    #[test]
    fn help_lists_command_names_without_single_letters() {
        let help: Vec<String> = command_help(BUILTIN).map(|(n, _)| n).collect();
        assert_eq!(
            help,
            [
                "shares | overview | 1",
                "jobs | 2",
                "preemptions | pre | 3",
                "scorecard | score | 4",
                "policy | 5"
            ]
        );
    }
}
