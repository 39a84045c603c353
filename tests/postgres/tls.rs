//! TLS to the store: the cluster serves TLS (`ssl=on`) with a certificate made here by a CA
//! made here (openssl), for 127.0.0.1 only. `sslmode=require` connects (encrypted, the
//! certificate unchecked); `verify-full` connects with the right CA and fails, naming
//! sslmode and sslrootcert, with another CA or another host name; `verify-ca` accepts another
//! host name; without TLS on the server, `require` fails and says so. No message carries the
//! password.

use std::path::Path;
use std::process::Command;

use quotatop_store::pg::StoreUrl;

use crate::Test;
use crate::cluster::Cluster;

pub fn tests() -> Vec<Test> {
    vec![(
        "tls::sslmodes_against_a_server_with_a_certificate_of_its_own".into(),
        Box::new(sslmodes_against_a_server_with_a_certificate_of_its_own),
    )]
}

fn openssl(dir: &Path, args: &[&str]) {
    let out = Command::new("openssl")
        .current_dir(dir)
        .args(args)
        .output()
        .expect("openssl (Debian's openssl package; scripts/test installs it)");
    assert!(
        out.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A CA named `name` in `dir` (`name.crt`, `name.key`).
fn make_ca(dir: &Path, name: &str) {
    openssl(
        dir,
        &[
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-keyout",
            &format!("{name}.key"),
            "-out",
            &format!("{name}.crt"),
            "-days",
            "2",
            "-subj",
            &format!("/CN=quotatop test {name}"),
            "-addext",
            "basicConstraints=critical,CA:TRUE",
            "-addext",
            "keyUsage=critical,keyCertSign,cRLSign",
        ],
    );
}

/// `server.crt` and `server.key` for 127.0.0.1, signed by the CA `ca`.
fn make_server_cert(dir: &Path, ca: &str) {
    openssl(
        dir,
        &[
            "req",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-keyout",
            "server.key",
            "-out",
            "server.csr",
            "-subj",
            "/CN=quotatop test server",
        ],
    );
    std::fs::write(
        dir.join("server.ext"),
        "subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\n\
         keyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n",
    )
    .unwrap();
    openssl(
        dir,
        &[
            "x509",
            "-req",
            "-in",
            "server.csr",
            "-CA",
            &format!("{ca}.crt"),
            "-CAkey",
            &format!("{ca}.key"),
            "-CAcreateserial",
            "-out",
            "server.crt",
            "-days",
            "2",
            "-extfile",
            "server.ext",
        ],
    );
}

/// Whether the session of `url` runs over TLS (the server's own view).
fn connects_with_tls(url: &StoreUrl) -> Result<bool, String> {
    let mut client = url.connect().map_err(|e| e.to_string())?;
    client
        .query_one(
            "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()",
            &[],
        )
        .map(|r| r.get(0))
        .map_err(|e| e.to_string())
}

fn sslmodes_against_a_server_with_a_certificate_of_its_own(c: &Cluster) {
    let dir = c.dir.path().join("tls");
    std::fs::create_dir(&dir).unwrap();
    make_ca(&dir, "ca");
    make_ca(&dir, "other-ca");
    make_server_cert(&dir, "ca");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(
        dir.join("server.key"),
        std::fs::Permissions::from_mode(0o600),
    )
    .unwrap();
    c.give_to_server(&dir.join("server.key"));
    c.give_to_server(&dir.join("server.crt"));
    let mut admin = c.admin("postgres");
    let db = c.database("tls");
    let base = |host: &str, opts: &str| {
        format!(
            "postgresql://postgres:{}@{host}:{}/{db}?connect_timeout=10&{opts}",
            c.password, c.port
        )
    };
    let ca = dir.join("ca.crt");
    let other = dir.join("other-ca.crt");
    let parse = |u: &str| StoreUrl::parse(u).unwrap();

    // No TLS on the server yet: require refuses to go on in plain text.
    let e = connects_with_tls(&parse(&base("127.0.0.1", "sslmode=require"))).unwrap_err();
    println!("  require, no TLS on the server: {e}");
    assert!(e.contains("sslmode=require"), "{e}");
    assert!(!e.contains(&c.password), "{e}");

    for sql in [
        format!(
            "ALTER SYSTEM SET ssl_cert_file = '{}'",
            dir.join("server.crt").display()
        ),
        format!(
            "ALTER SYSTEM SET ssl_key_file = '{}'",
            dir.join("server.key").display()
        ),
        "ALTER SYSTEM SET ssl = on".to_string(),
        "SELECT pg_reload_conf()".to_string(),
    ] {
        admin.batch_execute(&sql).unwrap();
    }
    // TLS off again when the test ends, passed or not: the other tests' cluster.
    struct Off(postgres::Client);
    impl Drop for Off {
        fn drop(&mut self) {
            let _ = self.0.batch_execute("ALTER SYSTEM RESET ssl");
            let _ = self.0.batch_execute("SELECT pg_reload_conf()");
        }
    }
    let _off = Off(admin);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while connects_with_tls(&parse(&base("127.0.0.1", "sslmode=require"))) != Ok(true) {
        assert!(
            std::time::Instant::now() < deadline,
            "the server does not serve TLS: {:?}; {}",
            connects_with_tls(&parse(&base("127.0.0.1", "sslmode=require"))),
            c.log()
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let full = |host: &str, root: &Path| {
        base(
            host,
            &format!("sslmode=verify-full&sslrootcert={}", root.display()),
        )
    };
    // Plain text is still there for whoever asks; prefer takes TLS when offered.
    assert_eq!(
        connects_with_tls(&parse(&base("127.0.0.1", "sslmode=disable"))),
        Ok(false)
    );
    assert_eq!(
        connects_with_tls(&parse(&base("127.0.0.1", "sslmode=prefer"))),
        Ok(true)
    );
    assert_eq!(connects_with_tls(&parse(&full("127.0.0.1", &ca))), Ok(true));
    // Another CA: refused, naming the mode and the CA file.
    let e = connects_with_tls(&parse(&full("127.0.0.1", &other))).unwrap_err();
    println!("  another CA: {e}");
    assert!(
        e.contains("sslmode=verify-full") && e.contains("sslrootcert="),
        "{e}"
    );
    assert!(e.contains(&other.display().to_string()), "{e}");
    assert!(!e.contains(&c.password), "{e}");
    // Another host name (the certificate names 127.0.0.1 only): verify-full refuses,
    // verify-ca (the chain only) connects.
    let e = connects_with_tls(&parse(&full("localhost", &ca))).unwrap_err();
    println!("  another host name: {e}");
    assert!(
        e.contains("sslmode=verify-full") && e.contains("name the host"),
        "{e}"
    );
    assert!(!e.contains(&c.password), "{e}");
    let verify_ca = base(
        "localhost",
        &format!("sslmode=verify-ca&sslrootcert={}", ca.display()),
    );
    assert_eq!(connects_with_tls(&parse(&verify_ca)), Ok(true));
    let e = connects_with_tls(&parse(&base(
        "localhost",
        &format!("sslmode=verify-ca&sslrootcert={}", other.display()),
    )))
    .unwrap_err();
    assert!(e.contains("sslmode=verify-ca"), "{e}");
    // The journal works over it.
    let location = quotatop_store::StoreLocation::parse(&full("127.0.0.1", &ca)).unwrap();
    let mut j = quotatop_store::journal::Journal::open_at(&location, Default::default()).unwrap();
    j.record(&quotatop_model::Snapshot {
        taken_at: 1_000,
        queues: vec![quotatop_analysis::fixture::queue(&[])],
        ..Default::default()
    })
    .unwrap();
    drop(j);
}
