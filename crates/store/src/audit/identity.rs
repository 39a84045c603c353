//! Who is making a change: the local account from the process's real uid (never only `$USER`,
//! which anyone can set) and, separately, the AWS principal the credentials act as.

/// The local account of this process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalUser {
    /// The real uid (`None` where the platform gives none).
    pub uid: Option<u32>,
    /// The account name the password database gives the uid; `$USER` only where there is no uid.
    pub name: String,
}

impl LocalUser {
    /// This process's account.
    pub fn current() -> Self {
        match real_uid() {
            Some(uid) => Self {
                uid: Some(uid),
                name: name_of(
                    uid,
                    &std::fs::read_to_string("/etc/passwd").unwrap_or_default(),
                )
                .unwrap_or_else(|| format!("uid-{uid}")),
            },
            None => Self {
                uid: None,
                name: std::env::var("USER")
                    .or_else(|_| std::env::var("USERNAME"))
                    .unwrap_or_else(|_| "unknown".to_string()),
            },
        }
    }

    /// `name (uid N)`, as the audit log and its listings show it.
    pub fn describe(&self) -> String {
        match self.uid {
            Some(uid) => format!("{} (uid {uid})", self.name),
            None => self.name.clone(),
        }
    }
}

/// The real uid from `/proc/self/status` (Linux); `None` elsewhere.
fn real_uid() -> Option<u32> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// The name of `uid` in a passwd(5) file's text.
fn name_of(uid: u32, passwd: &str) -> Option<String> {
    passwd.lines().find_map(|line| {
        let mut f = line.split(':');
        let name = f.next()?;
        let _password = f.next()?;
        let id: u32 = f.next()?.parse().ok()?;
        (id == uid && !name.is_empty()).then(|| quotatop_model::clean_text(name))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_come_from_the_uid_not_the_environment() {
        let passwd =
            "root:x:0:0:root:/root:/bin/bash\nalice:x:1000:1000::/home/alice:/bin/sh\nbroken\n";
        assert_eq!(name_of(0, passwd).as_deref(), Some("root"));
        assert_eq!(name_of(1000, passwd).as_deref(), Some("alice"));
        assert_eq!(name_of(7, passwd), None);
        let me = LocalUser::current();
        let id = std::process::Command::new("id").arg("-u").output().unwrap();
        let uid: u32 = String::from_utf8_lossy(&id.stdout).trim().parse().unwrap();
        assert_eq!(me.uid, Some(uid));
        let name = std::process::Command::new("id")
            .arg("-un")
            .output()
            .unwrap();
        assert_eq!(me.name, String::from_utf8_lossy(&name.stdout).trim());
        assert_eq!(me.describe(), format!("{} (uid {uid})", me.name));
    }
}
