//! TLS to PostgreSQL on rustls (the one TLS stack of this build): the connector the postgres
//! client is given, and what each `sslmode` checks.
//!
//! - `disable`: plain text ([`Tls::Off`]).
//! - `prefer` (libpq's default): TLS when the server offers it, else plain; the certificate is
//!   not checked (as libpq without a root certificate).
//! - `require`: TLS or no connection; the certificate is not checked.
//! - `verify-ca`: TLS, and the server's certificate chains to a CA of `sslrootcert`.
//! - `verify-full`: as `verify-ca`, and the certificate names the host connected to.
//!
//! `sslrootcert` is a PEM file of CA certificates, or `system` for the system's store; for
//! `verify-*` without it, `~/.postgresql/root.crt` (libpq's default) is read.

use std::future::Future;
use std::io;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use postgres::tls::{ChannelBinding, MakeTlsConnect, TlsConnect, TlsStream};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{
    CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme,
};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// An `sslmode`, as libpq names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SslMode {
    Disable,
    Prefer,
    Require,
    VerifyCa,
    VerifyFull,
}

impl SslMode {
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "disable" => Self::Disable,
            "prefer" => Self::Prefer,
            "require" => Self::Require,
            "verify-ca" => Self::VerifyCa,
            "verify-full" => Self::VerifyFull,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            Self::Disable => "disable",
            Self::Prefer => "prefer",
            Self::Require => "require",
            Self::VerifyCa => "verify-ca",
            Self::VerifyFull => "verify-full",
        }
    }

    /// Whether the server's certificate is checked against `sslrootcert`.
    pub fn verifies(self) -> bool {
        matches!(self, Self::VerifyCa | Self::VerifyFull)
    }
}

/// Why TLS could not be set up from the URL's options.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error(
        "sslmode={0} checks the server's certificate and needs the CA that signed it: add sslrootcert=FILE (PEM) or sslrootcert=system to the store URL, or put the CA in {1}"
    )]
    NoRootCert(&'static str, String),
    #[error("cannot read sslrootcert={}: {message}", quotatop_model::clean_text(&path.display().to_string()))]
    RootCert { path: PathBuf, message: String },
    #[error("cannot set up TLS: {0}")]
    Setup(String),
}

/// The client's TLS, built once per store URL.
#[derive(Clone)]
pub enum Tls {
    Off,
    On(Arc<ClientConfig>),
}

impl std::fmt::Debug for Tls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Tls::Off => "Tls::Off",
            Tls::On(_) => "Tls::On",
        })
    }
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::aws_lc_rs::default_provider())
}

impl Tls {
    /// The TLS `mode` asks for, with the CA certificates of `root` (a path, `system`, or
    /// `None`: libpq's default file under `home`).
    pub fn new(mode: SslMode, root: Option<&str>, home: Option<&Path>) -> Result<Self, TlsError> {
        let builder = ClientConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .map_err(|e| TlsError::Setup(e.to_string()))?;
        let config = match mode {
            SslMode::Disable => return Ok(Tls::Off),
            SslMode::Prefer | SslMode::Require => builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(Unchecked(provider())))
                .with_no_client_auth(),
            SslMode::VerifyCa | SslMode::VerifyFull => {
                let roots = Arc::new(roots(mode, root, home)?);
                let webpki =
                    rustls::client::WebPkiServerVerifier::builder_with_provider(roots, provider())
                        .build()
                        .map_err(|e| TlsError::Setup(e.to_string()))?;
                let verifier: Arc<dyn ServerCertVerifier> = if mode == SslMode::VerifyCa {
                    Arc::new(AnyName(webpki))
                } else {
                    webpki
                };
                builder
                    .dangerous()
                    .with_custom_certificate_verifier(verifier)
                    .with_no_client_auth()
            }
        };
        Ok(Tls::On(Arc::new(config)))
    }
}

/// The CA certificates for a `verify-*` mode.
fn roots(
    mode: SslMode,
    root: Option<&str>,
    home: Option<&Path>,
) -> Result<RootCertStore, TlsError> {
    let mut store = RootCertStore::empty();
    if root == Some("system") {
        let found = rustls_native_certs::load_native_certs();
        let (added, _) = store.add_parsable_certificates(found.certs);
        if added == 0 {
            return Err(TlsError::RootCert {
                path: "system".into(),
                message: "no CA certificate found in the system's store".into(),
            });
        }
        return Ok(store);
    }
    let path = match root {
        Some(p) => PathBuf::from(p),
        None => {
            let default = home.map(|h| h.join(".postgresql/root.crt"));
            match default.filter(|p| p.is_file()) {
                Some(p) => p,
                None => {
                    return Err(TlsError::NoRootCert(
                        mode.name(),
                        home.map_or_else(
                            || "~/.postgresql/root.crt".to_string(),
                            |h| h.join(".postgresql/root.crt").display().to_string(),
                        ),
                    ));
                }
            }
        }
    };
    let bad = |message: String| TlsError::RootCert {
        path: path.clone(),
        message,
    };
    // A FIFO would block the read forever, a directory fails with less to go on.
    match std::fs::metadata(&path) {
        Ok(m) if m.is_file() => {}
        Ok(_) => return Err(bad("not a regular file".into())),
        Err(e) => return Err(bad(e.to_string())),
    }
    let certs = CertificateDer::pem_file_iter(&path)
        .map_err(|e| bad(e.to_string()))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| bad(e.to_string()))?;
    if certs.is_empty() {
        return Err(bad("no PEM certificate in it".into()));
    }
    for c in certs {
        store.add(c).map_err(|e| bad(e.to_string()))?;
    }
    Ok(store)
}

/// `prefer` and `require`: encrypted, the certificate not checked (the handshake's signatures
/// are, so the session is with the certificate's key holder).
#[derive(Debug)]
struct Unchecked(Arc<rustls::crypto::CryptoProvider>);

impl ServerCertVerifier for Unchecked {
    fn verify_server_cert(
        &self,
        _: &CertificateDer<'_>,
        _: &[CertificateDer<'_>],
        _: &ServerName<'_>,
        _: &[u8],
        _: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// `verify-ca`: the chain is checked, the host name is not.
#[derive(Debug)]
struct AnyName(Arc<rustls::client::WebPkiServerVerifier>);

impl ServerCertVerifier for AnyName {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        match self
            .0
            .verify_server_cert(end_entity, intermediates, server_name, ocsp, now)
        {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

/// The connector given to the postgres client (`MakeTlsConnect`).
#[derive(Clone)]
pub struct RustlsConnect(pub Arc<ClientConfig>);

/// One connection's TLS, for the host `name`.
pub struct RustlsConnectOne {
    config: Arc<ClientConfig>,
    name: ServerName<'static>,
}

impl<S> MakeTlsConnect<S> for RustlsConnect
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    type Stream = RustlsStream<S>;
    type TlsConnect = RustlsConnectOne;
    type Error = rustls::pki_types::InvalidDnsNameError;

    fn make_tls_connect(&mut self, domain: &str) -> Result<RustlsConnectOne, Self::Error> {
        Ok(RustlsConnectOne {
            config: self.0.clone(),
            name: ServerName::try_from(domain.to_string())?,
        })
    }
}

impl<S> TlsConnect<S> for RustlsConnectOne
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    type Stream = RustlsStream<S>;
    type Error = io::Error;
    type Future = Pin<Box<dyn Future<Output = io::Result<RustlsStream<S>>> + Send>>;

    fn connect(self, stream: S) -> Self::Future {
        Box::pin(async move {
            tokio_rustls::TlsConnector::from(self.config)
                .connect(self.name, stream)
                .await
                .map(|s| RustlsStream(Box::new(s)))
        })
    }
}

/// A TLS session over the client's socket.
pub struct RustlsStream<S>(Box<tokio_rustls::client::TlsStream<S>>);

impl<S: AsyncRead + AsyncWrite + Unpin> AsyncRead for RustlsStream<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut *self.0).poll_read(cx, buf)
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> AsyncWrite for RustlsStream<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut *self.0).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut *self.0).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut *self.0).poll_shutdown(cx)
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> TlsStream for RustlsStream<S> {
    /// No channel binding: SCRAM authenticates without it (`channel_binding=prefer`).
    fn channel_binding(&self) -> ChannelBinding {
        ChannelBinding::none()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verify_modes_need_a_root_certificate() {
        let home = tempfile::TempDir::new().unwrap();
        for mode in [SslMode::VerifyCa, SslMode::VerifyFull] {
            let e = Tls::new(mode, None, Some(home.path())).unwrap_err();
            let text = e.to_string();
            assert!(text.contains(&format!("sslmode={}", mode.name())), "{text}");
            assert!(text.contains("sslrootcert="), "{text}");
        }
        let missing = home.path().join("none.pem");
        let e = Tls::new(SslMode::VerifyFull, missing.to_str(), None).unwrap_err();
        assert!(e.to_string().contains("cannot read sslrootcert="), "{e}");
        let empty = home.path().join("empty.pem");
        std::fs::write(&empty, "not a certificate\n").unwrap();
        let e = Tls::new(SslMode::VerifyFull, empty.to_str(), None).unwrap_err();
        assert!(e.to_string().contains("no PEM certificate"), "{e}");
        // A directory or a FIFO: refused at once (a FIFO's read would never return), the
        // path's escape sequences cleaned.
        let odd = home.path().join("dir\u{1b}[2J");
        std::fs::create_dir(&odd).unwrap();
        let e = Tls::new(SslMode::VerifyFull, odd.to_str(), None).unwrap_err();
        assert!(e.to_string().contains("not a regular file"), "{e}");
        assert!(!e.to_string().contains('\u{1b}'), "{e}");
        let fifo = home.path().join("fifo");
        assert!(
            std::process::Command::new("mkfifo")
                .arg(&fifo)
                .status()
                .unwrap()
                .success()
        );
        let e = Tls::new(SslMode::VerifyCa, fifo.to_str(), None).unwrap_err();
        assert!(e.to_string().contains("not a regular file"), "{e}");
        assert!(matches!(
            Tls::new(SslMode::Require, None, None).unwrap(),
            Tls::On(_)
        ));
        assert!(matches!(
            Tls::new(SslMode::Disable, None, None).unwrap(),
            Tls::Off
        ));
    }
}
