//! What the keyboard is doing: browsing, or typing a `:` command or a `/` filter.

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Input {
    #[default]
    Normal,
    Command(String),
    Filter(String),
}

impl Input {
    pub fn is_typing(&self) -> bool {
        !matches!(self, Input::Normal)
    }

    pub fn text_mut(&mut self) -> Option<&mut String> {
        match self {
            Input::Command(t) | Input::Filter(t) => Some(t),
            Input::Normal => None,
        }
    }
}
