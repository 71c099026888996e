//! The cluster's shared secret: every gRPC call (control plane and Flight) carries it in
//! the [`SECRET_HEADER`] metadata, and every service of a scheduler or worker that has one
//! refuses a call without it (UNAUTHENTICATED, logged with the peer's address).
//!
//! A scheduler or worker may listen on a loopback address without a secret, as Dask's do;
//! on any other address it needs one ([`check_listen_address`]). The secret comes from the
//! [`SECRET_ENV`] environment variable or a file, never from the command line (where every
//! user of the host could read it). It is compared in constant time. It is sent as is: on a
//! network that others can read, run the cluster inside a private network or tunnel.

use crate::error::ClusterError;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use tonic::metadata::{Ascii, MetadataValue};
use tonic::service::interceptor::InterceptedService;
use tonic::service::Interceptor;
use tonic::transport::Channel;
use tonic::{Request, Status};

/// The environment variable that holds the shared secret.
pub const SECRET_ENV: &str = "TESSERA_SECRET";

/// The request metadata key that carries the shared secret.
pub const SECRET_HEADER: &str = "x-tessera-secret";

/// A cluster's shared secret. `Debug` does not show it.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(Arc<str>);

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(…)")
    }
}

impl Secret {
    /// `text` as a secret: at least 16 characters of visible ASCII (it travels as gRPC
    /// metadata). Surrounding whitespace (a file's last newline) is dropped.
    pub fn new(text: &str) -> Result<Secret, ClusterError> {
        let text = text.trim();
        if text.len() < 16 {
            return Err(ClusterError::BadSecret(format!(
                "it has {} characters; at least 16 are needed",
                text.len()
            )));
        }
        if !text.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(ClusterError::BadSecret(
                "only visible ASCII characters (no spaces or control characters) may be used"
                    .into(),
            ));
        }
        Ok(Secret(text.into()))
    }

    /// The secret's text (for the dashboard, whose pages carry it as their token).
    pub fn text(&self) -> &str {
        &self.0
    }

    /// The secret in [`SECRET_ENV`], if it is set and not empty.
    pub fn from_env() -> Result<Option<Secret>, ClusterError> {
        match std::env::var(SECRET_ENV) {
            Ok(text) if !text.trim().is_empty() => Secret::new(&text).map(Some),
            Ok(_) | Err(std::env::VarError::NotPresent) => Ok(None),
            Err(std::env::VarError::NotUnicode(_)) => Err(ClusterError::BadSecret(format!(
                "{SECRET_ENV} is not valid UTF-8"
            ))),
        }
    }

    /// The secret in the file at `path` (its first line).
    pub fn from_file(path: &Path) -> Result<Secret, ClusterError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| ClusterError::BadSecret(format!("cannot read {}: {e}", path.display())))?;
        Secret::new(text.lines().next().unwrap_or(""))
    }

    /// The secret from `file` if given, else from [`SECRET_ENV`].
    pub fn from_file_or_env(file: Option<&Path>) -> Result<Option<Secret>, ClusterError> {
        match file {
            Some(path) => Secret::from_file(path).map(Some),
            None => Secret::from_env(),
        }
    }

    /// The secret's text, to hand to a child process's environment.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// Whether `presented` is this secret, in time that does not depend on where they
    /// first differ.
    pub fn matches(&self, presented: &[u8]) -> bool {
        let ours = self.0.as_bytes();
        let mut diff = ours.len() ^ presented.len();
        for (i, &b) in ours.iter().enumerate() {
            diff |= usize::from(b ^ presented.get(i).copied().unwrap_or(0));
        }
        diff == 0
    }
}

/// Refuses to listen on a non-loopback `address` without a secret.
pub fn check_listen_address(
    role: &str,
    address: SocketAddr,
    secret: Option<&Secret>,
) -> Result<(), ClusterError> {
    if secret.is_none() && !address.ip().is_loopback() {
        return Err(ClusterError::BadSecret(format!(
            "the {role} would listen on {address}, which is not a loopback address, without a \
             shared secret: set {SECRET_ENV} (or pass --secret-file) on every process of the \
             cluster and on its clients"
        )));
    }
    Ok(())
}

/// A client channel that adds the secret to every call.
pub type AuthedChannel = InterceptedService<Channel, AddSecret>;

/// A client's side: adds the secret, if any, to every call.
#[derive(Clone, Debug, Default)]
pub struct AddSecret(Option<MetadataValue<Ascii>>);

impl AddSecret {
    /// Adds `secret` to every call (nothing if `None`).
    pub fn new(secret: Option<&Secret>) -> AddSecret {
        // `Secret::new` admits visible ASCII only, which is always a valid value.
        AddSecret(secret.and_then(|s| MetadataValue::try_from(s.expose()).ok()))
    }
}

impl Interceptor for AddSecret {
    fn call(&mut self, mut request: Request<()>) -> Result<Request<()>, Status> {
        if let Some(value) = &self.0 {
            request.metadata_mut().insert(SECRET_HEADER, value.clone());
        }
        Ok(request)
    }
}

/// A service's side: refuses every call without the secret (lets all through if the
/// service has none).
#[derive(Clone, Debug)]
pub struct RequireSecret {
    secret: Option<Secret>,
    service: &'static str,
}

impl RequireSecret {
    /// The gate of `service` (named in logs).
    pub fn new(secret: Option<Secret>, service: &'static str) -> RequireSecret {
        RequireSecret { secret, service }
    }
}

impl Interceptor for RequireSecret {
    fn call(&mut self, request: Request<()>) -> Result<Request<()>, Status> {
        let Some(secret) = &self.secret else {
            return Ok(request);
        };
        let presented = request.metadata().get(SECRET_HEADER);
        if presented.is_some_and(|v| secret.matches(v.as_bytes())) {
            return Ok(request);
        }
        let peer = request
            .remote_addr()
            .map_or_else(|| "an unknown peer".to_string(), |a| a.to_string());
        let what = if presented.is_some() {
            "a wrong shared secret"
        } else {
            "no shared secret"
        };
        tracing::warn!(service = self.service, %peer, "call refused: {what}");
        Err(Status::unauthenticated(format!(
            "the {} refused the call: {what} (set {SECRET_ENV} to the cluster's secret)",
            self.service
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secret() -> Secret {
        Secret::new("correct-horse-battery-staple\n").unwrap()
    }

    #[test]
    fn secrets_are_checked_when_made() {
        assert!(
            matches!(Secret::new("short"), Err(ClusterError::BadSecret(m)) if m.contains("16"))
        );
        assert!(Secret::new("has a space in the middle").is_err());
        assert_eq!(secret().expose(), "correct-horse-battery-staple");
        assert_eq!(format!("{:?}", secret()), "Secret(…)");
    }

    #[test]
    fn only_the_same_secret_matches() {
        let s = secret();
        assert!(s.matches(b"correct-horse-battery-staple"));
        assert!(!s.matches(b"correct-horse-battery-stapl"));
        assert!(!s.matches(b"correct-horse-battery-staple!"));
        assert!(!s.matches(b"Correct-horse-battery-staple"));
        assert!(!s.matches(b""));
    }

    #[test]
    fn the_gate_refuses_calls_without_the_secret() {
        let mut gate = RequireSecret::new(Some(secret()), "test service");
        let status = gate.call(Request::new(())).unwrap_err();
        assert_eq!(status.code(), tonic::Code::Unauthenticated);
        assert!(status.message().contains("no shared secret"), "{status}");

        let wrong = Secret::new("incorrect-horse-battery").unwrap();
        let request = AddSecret::new(Some(&wrong)).call(Request::new(())).unwrap();
        let status = gate.call(request).unwrap_err();
        assert!(status.message().contains("wrong shared secret"), "{status}");

        let request = AddSecret::new(Some(&secret()))
            .call(Request::new(()))
            .unwrap();
        assert!(gate.call(request).is_ok());
        // Without a secret of its own the gate lets everything through.
        assert!(RequireSecret::new(None, "open")
            .call(Request::new(()))
            .is_ok());
    }

    #[test]
    fn only_loopback_listens_without_a_secret() {
        let local: SocketAddr = "127.0.0.1:8786".parse().unwrap();
        let any: SocketAddr = "0.0.0.0:8786".parse().unwrap();
        let v6: SocketAddr = "[::1]:8786".parse().unwrap();
        assert!(check_listen_address("scheduler", local, None).is_ok());
        assert!(check_listen_address("scheduler", v6, None).is_ok());
        let err = check_listen_address("scheduler", any, None).unwrap_err();
        assert!(err.to_string().contains(SECRET_ENV), "{err}");
        assert!(check_listen_address("scheduler", any, Some(&secret())).is_ok());
    }
}
