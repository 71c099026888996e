//! `Supervisor`: starts the storage, device and planner actors, holds their addresses,
//! and stops the whole actor system when it stops. Restarting a child that died would be
//! added here, through [`Children`].

use crate::device::{DeviceActor, CPU_DEVICE};
use crate::messages::{AddDevice, Shutdown};
use crate::planner::GraphPlannerActor;
use crate::storage::StorageActor;
use crate::system::SystemConfig;
use actix::{Actor, ActorContext, Addr, Context, Handler, System};
use std::io;

/// The addresses of the supervised actors.
#[derive(Debug, Clone)]
pub struct Children {
    /// The graph planner.
    pub planner: Addr<GraphPlannerActor>,
    /// The storage actor.
    pub storage: Addr<StorageActor>,
    /// The CPU pool's device actor.
    pub cpu: Addr<DeviceActor>,
}

/// Owns the other actors' lifetimes.
#[derive(Debug)]
pub struct Supervisor {
    children: Children,
}

impl Supervisor {
    /// Starts storage, the CPU pool and the planner (inside a running actix `System`) and
    /// registers the pool with the planner.
    pub fn start_children(config: &SystemConfig) -> io::Result<Children> {
        let storage = StorageActor::launch(config.host_memory_budget);
        let cpu = DeviceActor::cpu(
            &config.thread_prefix,
            config.cpu_threads,
            config.faults.clone(),
        )?;
        let slots = cpu.slots();
        let cpu = cpu.start();
        let planner = GraphPlannerActor::new(storage.clone()).start();
        planner.do_send(AddDevice {
            id: CPU_DEVICE,
            slots,
            device: cpu.clone().recipient(),
        });
        Ok(Children {
            planner,
            storage,
            cpu,
        })
    }

    /// A supervisor of already started children.
    pub fn new(children: Children) -> Supervisor {
        Supervisor { children }
    }

    /// The supervised actors.
    pub fn children(&self) -> &Children {
        &self.children
    }
}

impl Actor for Supervisor {
    type Context = Context<Self>;

    /// Stopping the supervisor stops the system, which drops every actor (the CPU pool
    /// joins its threads as it drops).
    fn stopped(&mut self, _: &mut Self::Context) {
        tracing::debug!("supervisor stopped; stopping the actor system");
        System::current().stop();
    }
}

impl Handler<Shutdown> for Supervisor {
    type Result = ();

    fn handle(&mut self, _: Shutdown, ctx: &mut Self::Context) {
        ctx.stop();
    }
}
