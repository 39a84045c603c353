//! `AWS_CA_BUNDLE` and a profile's `ca_bundle` are honoured as the AWS CLI honours them: behind a
//! TLS front on loopback whose certificate a test CA signed, `quotatop snapshot` fails
//! "UnknownIssuer" without the bundle and succeeds with it, from the variable or the profile. The
//! CA and the certificate are made with the `openssl` command (scripts/test installs it).

use std::path::Path;
use std::process::{Command, Output};
use std::sync::Arc;

use crate::data_support::quotatop;
use crate::emulator_support::{M5, QUEUE, create_share};
use aws_sdk_batch::types::QuotaShareResourceSharingStrategy as Strategy;
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;
use tokio_rustls::rustls::ServerConfig;
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};

fn openssl(dir: &Path, args: &[&str]) {
    let out = Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("the openssl command runs (Debian package openssl; scripts/test installs it)");
    assert!(
        out.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A test CA (`ca.pem`) and a certificate for 127.0.0.1 it signed (`srv.pem`, `srv.key`).
fn make_certificates(dir: &Path) {
    openssl(
        dir,
        &[
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            "ca.key",
            "-out",
            "ca.pem",
            "-days",
            "2",
            "-subj",
            "/CN=quotatop test CA",
        ],
    );
    openssl(
        dir,
        &[
            "req",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            "srv.key",
            "-out",
            "srv.csr",
            "-subj",
            "/CN=127.0.0.1",
        ],
    );
    std::fs::write(dir.join("ext"), "subjectAltName=IP:127.0.0.1\n").unwrap();
    openssl(
        dir,
        &[
            "x509",
            "-req",
            "-in",
            "srv.csr",
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-out",
            "srv.pem",
            "-days",
            "2",
            "-extfile",
            "ext",
        ],
    );
}

/// A TLS front on 127.0.0.1 that forwards each connection to `backend`; its port.
async fn tls_front(dir: &Path, backend: std::net::SocketAddr) -> u16 {
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(dir.join("srv.pem"))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let key = PrivateKeyDer::from_pem_file(dir.join("srv.key")).unwrap();
    let provider = Arc::new(tokio_rustls::rustls::crypto::aws_lc_rs::default_provider());
    let config = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .unwrap();
    let acceptor = TlsAcceptor::from(Arc::new(config));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                // A handshake the client refuses ends here; that is the point of one case.
                let Ok(mut tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let Ok(mut plain) = tokio::net::TcpStream::connect(backend).await else {
                    return;
                };
                let _ = tokio::io::copy_bidirectional(&mut tls, &mut plain).await;
            });
        }
    });
    port
}

async fn snapshot(url: String, env: Vec<(&'static str, String)>) -> Output {
    tokio::task::spawn_blocking(move || {
        let mut c = quotatop();
        c.args(["snapshot", "--queue", QUEUE, "--endpoint-url", &url]);
        for (k, v) in env {
            c.env(k, v);
        }
        c.output().unwrap()
    })
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ca_bundle_from_the_variable_or_the_profile_is_trusted() {
    let dir = tempfile::tempdir().unwrap();
    make_certificates(dir.path());
    let h = crate::emulator_support::start(&[(M5, 2)], "").await;
    let sdk = crate::emulator_support::client(&h, 1);
    create_share(&sdk, "team", &[(M5, 2)], Strategy::Reserve, None, false).await;
    let port = tls_front(dir.path(), h.addr()).await;
    let url = format!("https://127.0.0.1:{port}");
    let ca = dir.path().join("ca.pem").display().to_string();

    let out = snapshot(url.clone(), vec![]).await;
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "without the bundle: {err}");
    assert!(err.contains("UnknownIssuer"), "{err}");
    assert!(
        err.contains("set AWS_CA_BUNDLE (or the profile's ca_bundle)"),
        "{err}"
    );

    let out = snapshot(url.clone(), vec![("AWS_CA_BUNDLE", ca.clone())]).await;
    assert!(
        out.status.success(),
        "with AWS_CA_BUNDLE: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("team"));

    let config = dir.path().join("aws-config");
    std::fs::write(&config, format!("[profile ops]\nca_bundle = {ca}\n")).unwrap();
    let profile_env = || {
        vec![
            ("AWS_CONFIG_FILE", config.display().to_string()),
            ("AWS_PROFILE", "ops".to_string()),
        ]
    };
    let out = snapshot(url.clone(), profile_env()).await;
    assert!(
        out.status.success(),
        "with the profile's ca_bundle: {}",
        String::from_utf8_lossy(&out.stderr)
    );

    // A bundle that cannot be read is named with where its path came from.
    let out = snapshot(url, vec![("AWS_CA_BUNDLE", "/nonexistent/ca.pem".into())]).await;
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("cannot read the CA bundle /nonexistent/ca.pem (AWS_CA_BUNDLE)"),
        "{err}"
    );
}
