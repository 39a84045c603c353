//! Colour themes as semantic roles. Widget code asks for a [`Role`]; the colours live only in
//! `themes/*.toml` (built-ins embedded in the binary, user themes in the config directory).

use std::collections::BTreeMap;
use std::path::Path;
use std::str::FromStr;

use ratatui::style::{Color, Modifier, Style};
use serde::Deserialize;

/// What a piece of the screen means; themes map each role to a style.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Role {
    Text,
    Muted,
    Title,
    Border,
    Header,
    Selected,
    Accent,
    Healthy,
    Warning,
    Critical,
    /// A share's use of its own capacity.
    Own,
    /// Capacity a share uses beyond its limit (borrowed from others).
    Borrowed,
    /// Own capacity nobody uses.
    Idle,
    /// Own capacity used by other shares.
    Lent,
    Preempted,
    Looping,
    Badge,
    Prompt,
    Spark,
    /// Recorded data shown by time travel: the badge and the screens' borders.
    Past,
    /// A marked row (Jobs, Preemptions): picked for one action on them all.
    Marked,
}

impl Role {
    pub const ALL: [Role; 21] = [
        Role::Text,
        Role::Muted,
        Role::Title,
        Role::Border,
        Role::Header,
        Role::Selected,
        Role::Accent,
        Role::Healthy,
        Role::Warning,
        Role::Critical,
        Role::Own,
        Role::Borrowed,
        Role::Idle,
        Role::Lent,
        Role::Preempted,
        Role::Looping,
        Role::Badge,
        Role::Prompt,
        Role::Spark,
        Role::Past,
        Role::Marked,
    ];

    pub fn key(self) -> &'static str {
        match self {
            Role::Text => "text",
            Role::Muted => "muted",
            Role::Title => "title",
            Role::Border => "border",
            Role::Header => "header",
            Role::Selected => "selected",
            Role::Accent => "accent",
            Role::Healthy => "healthy",
            Role::Warning => "warning",
            Role::Critical => "critical",
            Role::Own => "own",
            Role::Borrowed => "borrowed",
            Role::Idle => "idle",
            Role::Lent => "lent",
            Role::Preempted => "preempted",
            Role::Looping => "looping",
            Role::Badge => "badge",
            Role::Prompt => "prompt",
            Role::Spark => "spark",
            Role::Past => "past",
            Role::Marked => "marked",
        }
    }

    /// Position in [`Role::ALL`] (the declaration order; a unit test checks they agree).
    fn index(self) -> usize {
        self as usize
    }
}

/// The built-in themes, embedded so the binary works from any directory.
/// In the order `t` cycles through them: the dark ones first, light (which paints its own
/// background) last.
pub const BUILT_IN: [(&str, &str); 4] = [
    ("dark", include_str!("../../../themes/dark.toml")),
    (
        "high-contrast",
        include_str!("../../../themes/high-contrast.toml"),
    ),
    (
        "colorblind",
        include_str!("../../../themes/colorblind.toml"),
    ),
    ("light", include_str!("../../../themes/light.toml")),
];

#[derive(Debug, thiserror::Error)]
pub enum ThemeError {
    #[error("theme {name}")]
    Toml {
        name: String,
        source: toml::de::Error,
    },
    #[error("theme {name}: unknown role `{role}` (roles: {})", role_names())]
    UnknownRole { name: String, role: String },
    #[error("theme {name}: role {role}: bad colour `{colour}`")]
    BadColour {
        name: String,
        role: String,
        colour: String,
    },
    #[error("theme {name}: missing roles {missing:?}")]
    Missing { name: String, missing: Vec<String> },
    #[error("no theme `{0}` (built-in: dark, light, high-contrast, colorblind; or a .toml path)")]
    NotFound(String),
    #[error("cannot read theme file {path}")]
    Read {
        path: String,
        source: std::io::Error,
    },
}

fn role_names() -> String {
    Role::ALL.map(Role::key).join(", ")
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ThemeFile {
    #[serde(default)]
    name: Option<String>,
    roles: BTreeMap<String, RoleSpec>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RoleSpec {
    fg: Option<String>,
    bg: Option<String>,
    #[serde(default)]
    bold: bool,
    #[serde(default)]
    dim: bool,
    #[serde(default)]
    italic: bool,
    #[serde(default)]
    underline: bool,
    #[serde(default)]
    reversed: bool,
}

/// A resolved theme: one style per role.
#[derive(Debug, Clone, PartialEq)]
pub struct Theme {
    pub name: String,
    styles: [Style; Role::ALL.len()],
}

impl Theme {
    pub fn style(&self, role: Role) -> Style {
        self.styles[role.index()]
    }

    /// Gives every cell the text role's colours where nothing drawn chose its own (the
    /// terminal's default), so a theme with a background (light) paints the whole screen and
    /// stays readable on a dark terminal. Themes without one change nothing.
    pub fn paint_background(&self, buf: &mut ratatui::buffer::Buffer) {
        let base = self.style(Role::Text);
        let Some(bg) = base.bg else {
            return;
        };
        let fg = base.fg.unwrap_or(Color::Reset);
        for cell in &mut buf.content {
            if cell.bg == Color::Reset {
                cell.bg = bg;
            }
            if cell.fg == Color::Reset {
                cell.fg = fg;
            }
        }
    }

    /// This theme with borders in the past role's colour, for time travel: its background
    /// colour (else its foreground) as the borders' foreground, bold. Only a foreground, so the
    /// titles drawn on the borders stay readable; without colours, its modifiers.
    pub fn with_past_borders(&self) -> Self {
        let past = self.style(Role::Past);
        let border = Style::new().add_modifier(Modifier::BOLD);
        let border = match past.bg.or(past.fg) {
            Some(c) => border.fg(c),
            None => border.add_modifier(past.add_modifier),
        };
        let mut t = self.clone();
        t.styles[Role::Border.index()] = border;
        t
    }

    /// This theme with borders in the warning role's colour, bold: live data that could not be
    /// refreshed (stale) is drawn inside them, as the past is inside its own.
    pub fn with_stale_borders(&self) -> Self {
        let warn = self.style(Role::Warning);
        let border = Style::new().add_modifier(Modifier::BOLD);
        let border = match warn.fg.or(warn.bg) {
            Some(c) => border.fg(c),
            None => border.add_modifier(Modifier::UNDERLINED),
        };
        let mut t = self.clone();
        t.styles[Role::Border.index()] = border;
        t
    }

    /// The default theme. The embedded file is checked by a unit test, so this cannot fail in a
    /// released binary; should it ever, the terminal's own colours are used.
    pub fn dark() -> Self {
        Self::built_in("dark").unwrap_or_else(|_| Self::plain("dark"))
    }

    /// Modifiers only, no colours: what `NO_COLOR` gets. Roles stay distinguishable by
    /// bold/reverse/underline and the gauges by their glyphs.
    pub fn plain(name: &str) -> Self {
        let mut styles = [Style::default(); Role::ALL.len()];
        for role in Role::ALL {
            styles[role.index()] = match role {
                Role::Selected | Role::Badge => Style::new().add_modifier(Modifier::REVERSED),
                Role::Past => Style::new().add_modifier(Modifier::REVERSED | Modifier::BOLD),
                Role::Marked => Style::new().add_modifier(Modifier::BOLD | Modifier::ITALIC),
                Role::Title | Role::Header | Role::Critical | Role::Looping => {
                    Style::new().add_modifier(Modifier::BOLD)
                }
                Role::Muted | Role::Idle => Style::new().add_modifier(Modifier::DIM),
                Role::Warning | Role::Prompt => Style::new().add_modifier(Modifier::UNDERLINED),
                _ => Style::new(),
            };
        }
        Self {
            name: name.to_string(),
            styles,
        }
    }

    /// This theme with every colour removed (modifiers kept), for `NO_COLOR`.
    pub fn without_colour(&self) -> Self {
        let plain = Self::plain(&self.name);
        let mut styles = plain.styles;
        for (s, own) in styles.iter_mut().zip(self.styles) {
            *s = s.add_modifier(own.add_modifier);
        }
        Self {
            name: self.name.clone(),
            styles,
        }
    }

    pub fn built_in(name: &str) -> Result<Self, ThemeError> {
        BUILT_IN
            .iter()
            .find(|(n, _)| *n == name)
            .ok_or_else(|| ThemeError::NotFound(name.to_string()))
            .and_then(|(n, text)| Self::parse(n, text))
    }

    /// A built-in name, a theme in `user_dir` (`NAME.toml`), or a path to a `.toml` file.
    pub fn resolve(name: &str, user_dir: Option<&Path>) -> Result<Self, ThemeError> {
        if let Ok(t) = Self::built_in(name) {
            return Ok(t);
        }
        let candidate = if name.ends_with(".toml") {
            Some(Path::new(name).to_path_buf())
        } else {
            user_dir.map(|d| d.join(format!("{name}.toml")))
        };
        match candidate {
            Some(path) if path.is_file() => {
                let text = quotatop_model::read_small_text(&path, quotatop_model::MAX_SMALL_FILE)
                    .map_err(|source| ThemeError::Read {
                    path: path.display().to_string(),
                    source,
                })?;
                Self::parse(name, &text)
            }
            _ => Err(ThemeError::NotFound(name.to_string())),
        }
    }

    /// Parses a theme file. Built-ins must define every role; a user theme may leave roles out,
    /// which then come from the dark theme.
    pub fn parse(name: &str, text: &str) -> Result<Self, ThemeError> {
        let file: ThemeFile = toml::from_str(text).map_err(|source| ThemeError::Toml {
            name: name.to_string(),
            source,
        })?;
        let display = file.name.clone().unwrap_or_else(|| name.to_string());
        let is_built_in = BUILT_IN.iter().any(|(n, _)| *n == name);
        let mut styles = if is_built_in {
            [Style::default(); Role::ALL.len()]
        } else {
            Self::dark().styles
        };
        for key in file.roles.keys() {
            if !Role::ALL.iter().any(|r| r.key() == key) {
                return Err(ThemeError::UnknownRole {
                    name: name.to_string(),
                    role: key.clone(),
                });
            }
        }
        let mut missing = Vec::new();
        for role in Role::ALL {
            match file.roles.get(role.key()) {
                Some(spec) => styles[role.index()] = spec.style(name, role)?,
                None if is_built_in => missing.push(role.key().to_string()),
                None => {}
            }
        }
        if !missing.is_empty() {
            return Err(ThemeError::Missing {
                name: name.to_string(),
                missing,
            });
        }
        Ok(Self {
            name: display,
            styles,
        })
    }
}

impl RoleSpec {
    fn style(&self, theme: &str, role: Role) -> Result<Style, ThemeError> {
        let colour = |c: &Option<String>| -> Result<Option<Color>, ThemeError> {
            c.as_deref()
                .map(|c| {
                    Color::from_str(c).map_err(|_| ThemeError::BadColour {
                        name: theme.to_string(),
                        role: role.key().to_string(),
                        colour: c.to_string(),
                    })
                })
                .transpose()
        };
        let mut style = Style::new();
        if let Some(fg) = colour(&self.fg)? {
            style = style.fg(fg);
        }
        if let Some(bg) = colour(&self.bg)? {
            style = style.bg(bg);
        }
        for (on, m) in [
            (self.bold, Modifier::BOLD),
            (self.dim, Modifier::DIM),
            (self.italic, Modifier::ITALIC),
            (self.underline, Modifier::UNDERLINED),
            (self.reversed, Modifier::REVERSED),
        ] {
            if on {
                style = style.add_modifier(m);
            }
        }
        Ok(style)
    }
}

/// The names `t` cycles through.
pub fn built_in_names() -> impl Iterator<Item = &'static str> {
    BUILT_IN.iter().map(|(n, _)| *n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn role_index_matches_all() {
        for (i, r) in Role::ALL.iter().enumerate() {
            assert_eq!(r.index(), i);
        }
    }

    #[test]
    fn every_built_in_theme_parses_and_defines_every_role() {
        for (name, text) in BUILT_IN {
            let theme = Theme::parse(name, text).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(theme.name, name);
        }
    }

    #[test]
    fn the_usage_roles_differ_in_every_built_in_theme() {
        for name in built_in_names() {
            let t = Theme::built_in(name).unwrap();
            let roles = [Role::Own, Role::Borrowed, Role::Idle, Role::Lent];
            for a in roles {
                for b in roles {
                    if a != b {
                        assert_ne!(t.style(a), t.style(b), "{name}: {a:?} vs {b:?}");
                    }
                }
            }
        }
    }

    #[test]
    fn a_user_theme_may_override_some_roles_and_inherits_the_rest() {
        let t = Theme::parse("mine", "[roles.own]\nfg = \"#ff0000\"\nbold = true\n").unwrap();
        assert_eq!(
            t.style(Role::Own),
            Style::new()
                .fg(Color::Rgb(255, 0, 0))
                .add_modifier(Modifier::BOLD)
        );
        assert_eq!(t.style(Role::Lent), Theme::dark().style(Role::Lent));
    }

    #[test]
    fn bad_themes_are_rejected_with_the_reason() {
        let e = Theme::parse("x", "[roles.nope]\nfg = \"red\"\n").unwrap_err();
        assert!(e.to_string().contains("unknown role `nope`"), "{e}");
        let e = Theme::parse("x", "[roles.own]\nfg = \"not-a-colour\"\n").unwrap_err();
        assert!(e.to_string().contains("bad colour"), "{e}");
        let e = Theme::parse("dark", "[roles.own]\nfg = \"red\"\n").unwrap_err();
        assert!(e.to_string().contains("missing roles"), "{e}");
        assert!(matches!(
            Theme::resolve("nosuch", None),
            Err(ThemeError::NotFound(_))
        ));
    }

    #[test]
    fn without_colour_keeps_no_colour_at_all() {
        for name in built_in_names() {
            let t = Theme::built_in(name).unwrap().without_colour();
            for role in Role::ALL {
                let s = t.style(role);
                assert_eq!((s.fg, s.bg), (None, None), "{name} {role:?}");
            }
            assert!(
                t.style(Role::Selected)
                    .add_modifier
                    .contains(Modifier::REVERSED)
                    || t.style(Role::Selected)
                        .add_modifier
                        .contains(Modifier::BOLD)
            );
        }
    }
}
