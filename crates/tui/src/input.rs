//! What the keyboard is doing: browsing, or typing a `:` command or a `/` filter.

use super::field::Text;

#[derive(Debug, Clone, Default)]
pub enum Input {
    #[default]
    Normal,
    Command(Text),
    Filter(Text),
}

impl Input {
    pub fn is_typing(&self) -> bool {
        !matches!(self, Input::Normal)
    }

    pub fn text_mut(&mut self) -> Option<&mut Text> {
        match self {
            Input::Command(t) | Input::Filter(t) => Some(t),
            Input::Normal => None,
        }
    }
}
