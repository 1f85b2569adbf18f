//! The console checks of `supervise doctor`: that the console's public URL
//! (`--console-url`, `SUPERVISE_CONSOLE_URL`, as `supervise console` and `operator link`
//! read it) answers `GET /healthz`, and for https that its certificate chains to a CA this
//! host trusts (the system store, or `SSL_CERT_FILE`), names the URL's host, and how long
//! until it expires (a warning under [`WARN_DAYS`] days, a failure once expired).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use http_body_util::{BodyExt, Empty};
use hyper::body::Bytes;
use hyper_util::rt::TokioIo;
use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{CertificateError, DigitallySignedStruct, RootCertStore, SignatureScheme};
use tokio::io::{AsyncRead, AsyncWrite};

use super::{Check, fail, pass, warn};

/// How long the whole check may take: connect, handshake, request and answer.
const TIMEOUT: Duration = Duration::from_secs(10);
/// A certificate expiring sooner than this is a warning.
const WARN_DAYS: i64 = 14;

const START: &str = "start the console (systemctl start supervise-console), or give doctor \
                     the URL it serves (--console-url, SUPERVISE_CONSOLE_URL)";

/// Appends the console checks for `url`, or one line saying none was given.
pub(super) async fn checks(url: Option<&str>, checks: &mut Vec<Check>) {
    let Some(url) = url
        .map(|u| u.trim().trim_end_matches('/'))
        .filter(|u| !u.is_empty())
    else {
        checks.push(pass(
            "console",
            "not checked: no console URL (--console-url or SUPERVISE_CONSOLE_URL)".into(),
        ));
        return;
    };
    let target = match Target::parse(url) {
        Ok(t) => t,
        Err(why) => {
            checks.push(fail(
                "console",
                format!("{url} is not a console URL: {why}"),
                "give the URL operators open, e.g. https://console.example.org".into(),
            ));
            return;
        }
    };
    match tokio::time::timeout(TIMEOUT, probe(&target)).await {
        Err(_) => checks.push(fail(
            "console",
            format!("{url} did not answer within {}s", TIMEOUT.as_secs()),
            START.into(),
        )),
        Ok(Err(why)) => checks.push(fail(
            "console",
            format!("{url} does not answer: {why}"),
            START.into(),
        )),
        Ok(Ok(probe)) => {
            checks.push(health(url, &probe));
            if let Some(cert) = probe.certificate {
                checks.push(cert);
            }
        }
    }
}

/// Where the URL points: scheme, host (without an IPv6 address's brackets), port and the
/// health path under the URL's own path.
struct Target {
    https: bool,
    host: String,
    port: u16,
    authority: String,
    path: String,
}

impl Target {
    fn parse(url: &str) -> Result<Target, String> {
        let uri: http::Uri = url.parse().map_err(|e| format!("{e}"))?;
        let https = match uri.scheme_str() {
            Some("https") => true,
            Some("http") => false,
            _ => return Err("it must start with http:// or https://".into()),
        };
        let authority = uri.authority().ok_or("it names no host")?;
        let host = authority.host().trim_matches(['[', ']']).to_string();
        let port = authority.port_u16().unwrap_or(if https { 443 } else { 80 });
        let path = format!("{}/healthz", uri.path().trim_end_matches('/'));
        Ok(Target {
            https,
            host,
            port,
            authority: authority.to_string(),
            path,
        })
    }
}

/// What the console answered, and for https the certificate check.
struct Probe {
    status: http::StatusCode,
    body: String,
    certificate: Option<Check>,
}

fn health(url: &str, probe: &Probe) -> Check {
    let body = probe.body.trim();
    if probe.status == http::StatusCode::OK {
        pass("console", format!("{url} answers /healthz: {body}"))
    } else {
        fail(
            "console",
            format!("{url}/healthz answers {}: {body}", probe.status),
            "read the console's log (journalctl -u supervise-console): /healthz fails while \
             its database does not answer or take writes"
                .into(),
        )
    }
}

async fn probe(target: &Target) -> Result<Probe, String> {
    let tcp = tokio::net::TcpStream::connect((target.host.as_str(), target.port))
        .await
        .map_err(|e| format!("cannot connect to {}: {e}", target.authority))?;
    if !target.https {
        let (status, body) = get(tcp, target).await?;
        return Ok(Probe {
            status,
            body,
            certificate: None,
        });
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let name = ServerName::try_from(target.host.clone())
        .map_err(|e| format!("{} is not a host name: {e}", target.host))?;
    let mut roots = RootCertStore::empty();
    roots.add_parsable_certificates(rustls_native_certs::load_native_certs().certs);
    let webpki = WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider.clone())
        .build()
        .map_err(|e| {
            format!("no CA certificates to check it against ({e}): install ca-certificates")
        })?;
    let recorder = Arc::new(Recorder {
        inner: webpki.clone(),
        chain: Mutex::default(),
    });
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .dangerous()
        .with_custom_certificate_verifier(recorder.clone())
        .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    let tls = tokio_rustls::TlsConnector::from(Arc::new(config))
        .connect(name.clone(), tcp)
        .await
        .map_err(|e| format!("TLS handshake with {} failed: {e}", target.authority))?;
    let chain = recorder.chain.lock().map(|mut c| c.take()).ok().flatten();
    let certificate = Some(match chain {
        Some((end, rest)) => certificate(&webpki, &end, &rest, &name),
        None => fail(
            "console certificate",
            format!("{} presented no certificate", target.authority),
            "serve the console with --tls-cert and --tls-key".into(),
        ),
    });
    let (status, body) = get(tls, target).await?;
    Ok(Probe {
        status,
        body,
        certificate,
    })
}

/// `GET` the health path over one HTTP/1.1 connection; the status and the body's text.
async fn get<S>(stream: S, target: &Target) -> Result<(http::StatusCode, String), String>
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|e| e.to_string())?;
    let conn = tokio::spawn(conn);
    let request = http::Request::get(target.path.as_str())
        .header(http::header::HOST, target.authority.as_str())
        .header(http::header::USER_AGENT, "supervise-doctor")
        .body(Empty::<Bytes>::new())
        .map_err(|e| e.to_string())?;
    let response = sender
        .send_request(request)
        .await
        .map_err(|e| format!("no answer to GET {}: {e}", target.path))?;
    let status = response.status();
    let body = response
        .into_body()
        .collect()
        .await
        .map_err(|e| e.to_string())?
        .to_bytes();
    conn.abort();
    let text = String::from_utf8_lossy(&body[..body.len().min(200)]).into_owned();
    Ok((status, text))
}

/// The certificate the console presented, checked as a browser would at this moment, and
/// its expiry (from the verifier's own report for a moment past every certificate's end).
fn certificate(
    webpki: &WebPkiServerVerifier,
    end: &CertificateDer<'static>,
    rest: &[CertificateDer<'static>],
    name: &ServerName<'static>,
) -> Check {
    let host = name.to_str();
    let check = |at: UnixTime| webpki.verify_server_cert(end, rest, name, &[], at);
    let now = UnixTime::now();
    match check(now) {
        Ok(_) => {
            let far =
                UnixTime::since_unix_epoch(Duration::from_secs(now.as_secs() + 200 * 365 * 86_400));
            let Err(rustls::Error::InvalidCertificate(CertificateError::ExpiredContext {
                not_after,
                ..
            })) = check(far)
            else {
                return pass("console certificate", format!("valid for {host}"));
            };
            let days = (not_after.as_secs() as i64 - now.as_secs() as i64) / 86_400;
            let detail = format!("valid for {host} until {} ({days} days)", date(not_after));
            if days < WARN_DAYS {
                warn(
                    "console certificate",
                    format!("expires in {days} days: {detail}"),
                    "renew it and restart the console with the new --tls-cert".into(),
                )
            } else {
                pass("console certificate", detail)
            }
        }
        Err(rustls::Error::InvalidCertificate(e)) => {
            let (detail, fix) = match e {
                CertificateError::ExpiredContext { not_after, .. } => (
                    format!("expired on {}", date(not_after)),
                    "renew it and restart the console with the new --tls-cert",
                ),
                CertificateError::Expired => (
                    "has expired".into(),
                    "renew it and restart the console with the new --tls-cert",
                ),
                CertificateError::NotValidForNameContext { presented, .. } => (
                    format!(
                        "names {}, not {host}",
                        presented
                            .iter()
                            .map(|n| presented_name(n))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                    "serve a certificate for the URL's host, or give doctor the URL operators use",
                ),
                CertificateError::NotValidForName => (
                    format!("does not name {host}"),
                    "serve a certificate for the URL's host, or give doctor the URL operators use",
                ),
                CertificateError::UnknownIssuer => (
                    "is not signed by a CA this host trusts".into(),
                    "serve a chain to a public CA, or add your CA to the system store \
                     (update-ca-certificates)",
                ),
                other => (
                    format!("is refused: {other}"),
                    "serve a certificate a browser accepts for the URL's host",
                ),
            };
            fail(
                "console certificate",
                format!("the certificate for {host} {detail}"),
                fix.into(),
            )
        }
        Err(e) => fail(
            "console certificate",
            format!("the certificate for {host} cannot be checked: {e}"),
            "serve a certificate a browser accepts for the URL's host".into(),
        ),
    }
}

/// A name as the verifier reports it (`DnsName("a.example")`, `IpAddress(10.0.0.1)`),
/// without the variant around it.
fn presented_name(reported: &str) -> &str {
    reported
        .split_once('(')
        .and_then(|(_, rest)| rest.strip_suffix(')'))
        .map(|inner| inner.trim_matches('"'))
        .unwrap_or(reported)
}

fn date(t: UnixTime) -> String {
    time::OffsetDateTime::from_unix_timestamp(t.as_secs() as i64)
        .ok()
        .and_then(|d| {
            d.format(&time::format_description::well_known::Rfc3339)
                .ok()
        })
        .unwrap_or_else(|| t.as_secs().to_string())
}

/// Completes the handshake whatever the certificate (doctor reports on it rather than
/// stopping there), keeping the chain for [`certificate`]; handshake signatures are still
/// checked by the real verifier.
#[derive(Debug)]
struct Recorder {
    inner: Arc<WebPkiServerVerifier>,
    chain: Mutex<Option<(CertificateDer<'static>, Vec<CertificateDer<'static>>)>>,
}

impl ServerCertVerifier for Recorder {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        if let Ok(mut chain) = self.chain.lock() {
            *chain = Some((
                end_entity.clone().into_owned(),
                intermediates
                    .iter()
                    .map(|c| c.clone().into_owned())
                    .collect(),
            ));
        }
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.inner.supported_verify_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::{Target, presented_name};

    #[test]
    fn the_health_path_sits_under_the_urls_own_path_and_ports_default_by_scheme() {
        let t = Target::parse("https://console.example.org").unwrap();
        assert_eq!(
            (t.https, t.host.as_str(), t.port, t.path.as_str()),
            (true, "console.example.org", 443, "/healthz")
        );
        let t = Target::parse("http://[::1]:7412/supervise").unwrap();
        assert_eq!(
            (t.https, t.host.as_str(), t.port, t.path.as_str()),
            (false, "::1", 7412, "/supervise/healthz")
        );
        assert_eq!(t.authority, "[::1]:7412");
        assert!(Target::parse("ftp://example.org").is_err());
        assert!(Target::parse("console.example.org").is_err());
    }

    #[test]
    fn a_presented_name_is_shown_without_the_verifiers_wrapping() {
        assert_eq!(presented_name("DnsName(\"a.example\")"), "a.example");
        assert_eq!(presented_name("IpAddress(10.0.0.1)"), "10.0.0.1");
        assert_eq!(presented_name("plain"), "plain");
    }
}
