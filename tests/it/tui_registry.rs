//! The recipe for a new console screen, followed by a test: the screen in one place (`hello`,
//! standing for its file: the screen, its registry entry and the work it loads) registered
//! with one line (`Screens::with(hello::ENTRY)`, as the `screens!` list in the tui's `lib.rs`
//! does for the built-in ones). Nothing else in the console changes, yet its key and its `:`
//! command open it, `?` and the footer list it, it draws, and its work's answer comes back to
//! it.

use std::sync::Arc;

use crate::tui_support::*;
use quotatop_tui::effects::Services;
use quotatop_tui::registry::{RegistryError, ScreenCommand, ScreenEntry, ScreenKey, Screens};
use quotatop_tui::screen::Kind;
use quotatop_tui::{App, AppOptions};
use ratatui::Terminal;
use ratatui::backend::TestBackend;

/// The screen's file.
mod hello {
    use std::sync::Arc;

    use quotatop_tui::data::Data;
    use quotatop_tui::effects::{Effect, EffectResult, ScreenWork};
    use quotatop_tui::list::ListState;
    use quotatop_tui::registry::{Opens, ScreenCommand, ScreenEntry, ScreenKey, fresh};
    use quotatop_tui::screen::{Ctx, DrawCtx, Kind, Load, Screen};
    use ratatui::Frame;
    use ratatui::layout::Rect;
    use ratatui::widgets::{Block, Borders, Paragraph};

    pub const KIND: Kind = Kind::new("Hello");

    /// Its registry entry.
    pub const ENTRY: ScreenEntry = ScreenEntry {
        kind: KIND,
        opens: Opens::Fresh(fresh::<Hello>),
        key: Some(ScreenKey {
            name: "hello",
            keys: &["6"],
            description: "hello: the test screen",
            hint: Some("screens"),
        }),
        command: Some(ScreenCommand {
            names: &["hello", "hi", "6"],
            help: "greets the queue",
        }),
    };

    /// What the screen's work reads (built outside the console, as the journal readers are).
    pub trait Greeter: Send + Sync {
        fn greet(&self, queue: &str) -> String;
    }

    /// Shows a greeting for the current queue, loaded through its own work.
    #[derive(Default)]
    pub struct Hello {
        greeting: Option<String>,
    }

    impl Screen for Hello {
        fn kind(&self) -> Kind {
            KIND
        }

        fn refresh(&mut self, _data: &Data, _queue: Option<&str>) {}

        fn load(&mut self, _why: Load, ctx: &Ctx) -> Vec<Effect> {
            let queue = ctx.queue_name().unwrap_or_default();
            vec![Effect::Screen(ScreenWork::new(
                KIND,
                move |greeter: Option<&Arc<dyn Greeter>>| match greeter {
                    Some(g) => g.greet(&queue),
                    None => "nobody to greet you".to_string(),
                },
            ))]
        }

        fn on_result(&mut self, result: &EffectResult, _ctx: &Ctx) -> Vec<Effect> {
            if let Some(g) = result.answer::<String>(KIND) {
                self.greeting = Some(g.clone());
            }
            Vec::new()
        }

        fn draw(&self, frame: &mut Frame, area: Rect, _ctx: &DrawCtx) {
            let text = self.greeting.as_deref().unwrap_or("loading…");
            let block = Block::default().borders(Borders::ALL).title(" Hello ");
            frame.render_widget(
                Paragraph::new(format!("greeting: {text}")).block(block),
                area,
            );
        }

        fn list(&mut self) -> Option<&mut ListState> {
            None
        }

        fn list_ref(&self) -> Option<&ListState> {
            None
        }
    }
}

struct Polite;

impl hello::Greeter for Polite {
    fn greet(&self, queue: &str) -> String {
        format!("good morning, {queue}")
    }
}

/// The real loop on a `TestBackend` with `screens`: the fixture snapshot, then the keys; it
/// ends when the script and the work it started are done.
async fn run_screens(
    height: u16,
    screens: Screens,
    opts: AppOptions,
    services: Services,
    keys: &str,
) -> (Terminal<TestBackend>, App) {
    let terminal = Terminal::new(TestBackend::new(120, height)).unwrap();
    let app = App::with_screens(opts, screens);
    crate::tui_support::run_loop(terminal, app, vec![snapshot()], typed(keys), services).await
}

/// The console's screens with Hello, and the service its work reads.
fn with_hello() -> Screens {
    Screens::builtin()
        .with(hello::ENTRY)
        .unwrap()
        .serving(Arc::new(Polite) as Arc<dyn hello::Greeter>)
}

fn services() -> Services {
    Services::default()
}

#[tokio::test]
async fn its_key_opens_it_and_its_work_answers_it() {
    let (t, app) = run_screens(30, with_hello(), options(), services(), "6").await;
    assert_eq!(app.screen_kind(), hello::KIND);
    let text = screen_text(&t);
    assert!(text.contains("┌ Hello "), "{text}");
    assert!(
        text.contains("greeting: good morning, ml-training"),
        "{text}"
    );
    // Its key joins the other screens' in the footer.
    assert!(text.contains("<1-6>screens"), "{text}");
}

#[tokio::test]
async fn its_command_opens_it_and_esc_leaves_it() {
    let (t, app) = run_screens(30, with_hello(), options(), services(), ":hi\n").await;
    assert_eq!(app.screen_kind(), hello::KIND);
    // Without its service the work still answers, and says so.
    let unserved = Screens::builtin().with(hello::ENTRY).unwrap();
    let (t2, _) = run_screens(30, unserved, options(), services(), ":hello\n").await;
    assert!(screen_text(&t2).contains("greeting: nobody to greet you"));
    drop(t);
    let (_, app) = run_screens(30, with_hello(), options(), services(), ":hello\n\x1b").await;
    assert_eq!(app.screen_kind(), Kind::Overview);
}

#[tokio::test]
async fn help_lists_its_key_and_its_command() {
    let (t, _) = run_screens(120, with_hello(), options(), services(), "?").await;
    let text = screen_text(&t);
    assert!(
        text.contains("│  6               hello: the test screen"),
        "{text}"
    );
    // After the built-in screens' commands, before the others; one-letter names unlisted.
    let hello = text.find("hello | hi | 6        greets the queue");
    let scorecard = text.find("scorecard | score | 4");
    let queue = text.find("queue NAME");
    assert!(
        hello.is_some() && scorecard < hello && hello < queue,
        "{text}"
    );
}

#[tokio::test]
async fn without_its_entry_the_console_does_not_know_it() {
    let (t, app) = run_screens(30, Screens::builtin(), options(), services(), "6").await;
    assert_eq!(app.screen_kind(), Kind::Overview);
    assert!(screen_text(&t).contains("<1-5>screens"));
    let (t, _) = run_screens(30, Screens::builtin(), options(), services(), ":hello\n").await;
    assert!(screen_text(&t).contains("unknown command :hello"));
}

#[test]
fn an_entry_that_clashes_is_refused() {
    let twice = with_hello().with(hello::ENTRY).err();
    assert_eq!(twice, Some(RegistryError::Kind(hello::KIND)));
    let jobs = ScreenEntry {
        kind: Kind::new("Other"),
        key: None,
        command: Some(ScreenCommand {
            names: &["jobs"],
            help: "",
        }),
        ..hello::ENTRY
    };
    let err = Screens::builtin().with(jobs).err().unwrap();
    assert_eq!(
        err.to_string(),
        "screen Other: the command `:jobs` is already another screen's"
    );
}

#[tokio::test]
async fn a_key_already_bound_is_left_to_its_action_and_said() {
    let quits = ScreenEntry {
        key: Some(ScreenKey {
            keys: &["q", "6"],
            ..hello::ENTRY.key.unwrap()
        }),
        ..hello::ENTRY
    };
    let screens = Screens::builtin().with(quits).unwrap();
    let (t, _) = run_screens(30, screens.clone(), options(), services(), "").await;
    let text = screen_text(&t);
    assert!(
        text.contains("[keys] hello: `q` is already bound to `quit`"),
        "{text}"
    );
    let (_, app) = run_screens(30, screens.clone(), options(), services(), "6").await;
    assert_eq!(app.screen_kind(), hello::KIND);
    let (_, app) = run_screens(30, screens, options(), services(), "q").await;
    assert!(app.should_quit());
}

/// A screen that takes every screen answer of its type, whoever asked: the app, not the
/// screen, must keep other screens' answers from it.
mod greedy {
    use quotatop_tui::data::Data;
    use quotatop_tui::effects::{Effect, EffectResult};
    use quotatop_tui::list::ListState;
    use quotatop_tui::registry::{Opens, ScreenEntry, ScreenKey, fresh};
    use quotatop_tui::screen::{Ctx, DrawCtx, Kind, Screen};
    use ratatui::Frame;
    use ratatui::layout::Rect;
    use ratatui::widgets::Paragraph;

    pub const KIND: Kind = Kind::new("Greedy");

    pub const ENTRY: ScreenEntry = ScreenEntry {
        kind: KIND,
        opens: Opens::Fresh(fresh::<Greedy>),
        key: Some(ScreenKey {
            name: "greedy",
            keys: &["7"],
            description: "takes any answer",
            hint: None,
        }),
        command: None,
    };

    #[derive(Default)]
    pub struct Greedy {
        seen: Vec<String>,
    }

    impl Screen for Greedy {
        fn kind(&self) -> Kind {
            KIND
        }

        fn refresh(&mut self, _data: &Data, _queue: Option<&str>) {}

        fn on_result(&mut self, result: &EffectResult, _ctx: &Ctx) -> Vec<Effect> {
            if let EffectResult::Screen { answer, .. } = result
                && let Some(s) = answer.get::<String>()
            {
                self.seen.push(s.clone());
            }
            Vec::new()
        }

        fn draw(&self, frame: &mut Frame, area: Rect, _ctx: &DrawCtx) {
            let text = format!("seen: [{}]", self.seen.join(", "));
            frame.render_widget(Paragraph::new(text), area);
        }

        fn list(&mut self) -> Option<&mut ListState> {
            None
        }

        fn list_ref(&self) -> Option<&ListState> {
            None
        }
    }
}

#[test]
fn a_screens_answer_goes_to_the_screens_of_its_kind_only() {
    use quotatop_tui::Msg;
    use quotatop_tui::effects::{EffectResult, ScreenAnswer};
    let screens = with_hello().with(greedy::ENTRY).unwrap();
    let mut app = App::with_screens(options(), screens);
    app.update(Msg::Snapshot(Box::new(snapshot())));
    app.update(Msg::Key(crossterm::event::KeyEvent::from(
        crossterm::event::KeyCode::Char('7'),
    )));
    assert_eq!(app.screen_kind(), greedy::KIND);
    let answer = |screen: Kind, text: &str| {
        Msg::Done(EffectResult::Screen {
            screen,
            answer: ScreenAnswer::new(text.to_string()),
        })
    };
    app.update(answer(hello::KIND, "for hello"));
    app.update(answer(greedy::KIND, "for greedy"));
    let mut t = Terminal::new(TestBackend::new(100, 30)).unwrap();
    t.draw(|f| app.draw(f)).unwrap();
    let text = screen_text(&t);
    assert!(text.contains("seen: [for greedy]"), "{text}");
}
