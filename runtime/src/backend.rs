//! Where a session's jobs run: its own actor system in this process, or a cluster's
//! scheduler. Both take the same chunk graphs and report through the same job events.

use crate::error::{Error, Result};
use std::sync::Arc;
use std::time::Duration;
use tessera_actors::{ActorSystem, ChunkGraph, JobHandle, Recorder};
use tessera_cluster::{ClusterClient, Secret};

/// How long connecting to a scheduler may take.
pub(crate) const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// A session's executor.
#[derive(Debug)]
pub(crate) enum Backend {
    /// The in-process actor system.
    Local(ActorSystem),
    /// A cluster (the workers budget their own memory).
    Cluster { client: Box<ClusterClient> },
}

impl Backend {
    /// A connection to the scheduler at `address`, calling with `secret`.
    pub fn connect(address: &str, secret: Option<&Secret>) -> Result<Backend> {
        let client =
            ClusterClient::connect(address, CONNECT_TIMEOUT, secret).map_err(Error::from)?;
        Ok(Backend::Cluster {
            client: Box::new(client),
        })
    }

    /// Validates and submits `graph`.
    pub fn submit(&self, graph: ChunkGraph) -> Result<JobHandle> {
        match self {
            Backend::Local(system) => system
                .submit(graph)
                .map_err(|e| Error::Runtime(e.to_string())),
            Backend::Cluster { client, .. } => {
                graph
                    .validate()
                    .map_err(|e| Error::Runtime(format!("invalid chunk graph: {e}")))?;
                client.submit(graph).map_err(Error::from)
            }
        }
    }

    /// Host-memory bytes reserved in this process (none for a cluster: its workers hold
    /// the data).
    pub fn reserved_bytes(&self) -> u64 {
        match self {
            Backend::Local(system) => system.reserved_bytes(),
            Backend::Cluster { .. } => 0,
        }
    }

    /// Waits until the in-process storage has freed the kept chunks whose handles were
    /// dropped before this call, so that [`Self::reserved_bytes`] no longer counts them (a
    /// cluster's workers free theirs on their own).
    pub fn settle(&self) -> Result<()> {
        match self {
            Backend::Local(system) => system
                .settle()
                .map_err(|e| Error::Runtime(format!("storage did not settle: {e}"))),
            Backend::Cluster { .. } => Ok(()),
        }
    }

    /// The recorder of the in-process actor system (a cluster's jobs are not recorded yet).
    pub fn recorder(&self) -> Option<&Arc<Recorder>> {
        match self {
            Backend::Local(system) => Some(system.recorder()),
            Backend::Cluster { .. } => None,
        }
    }

    /// Stops the actor system (a cluster connection just closes).
    pub fn shutdown(self) -> Result<()> {
        match self {
            Backend::Local(system) => system.shutdown().map_err(|e| Error::Runtime(e.to_string())),
            Backend::Cluster { .. } => Ok(()),
        }
    }
}
