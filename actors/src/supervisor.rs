//! `Supervisor`: starts the storage, device (the CPU pool and one per GPU) and planner
//! actors, restarts a device or the
//! storage actor that dies (at most [`MAX_RESTARTS`] times each within
//! [`RESTART_WINDOW`], as Erlang supervisors bound restart intensity, waiting [`BACKOFF`]
//! doubled for each recent restart), tells the planner what died and what replaced it, and
//! stops the whole actor system when it stops.

use crate::device::{gpu_device_id, DeviceActor, CPU_DEVICE};
use crate::memory::HostPool;
use crate::messages::{
    ActorDied, ActorDown, ActorName, AddDevice, DeviceId, Shutdown, StorageRestarted,
};
use crate::planner::GraphPlannerActor;
use crate::recorder::Recorder;
use crate::storage::{StorageActor, StorageThreads};
use crate::store::StoreConfig;
use crate::system::SystemConfig;
use actix::{Actor, ActorContext, Addr, AsyncContext, Context, Handler, System};
use std::collections::HashMap;
use std::io;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Restarts of one actor at most within [`RESTART_WINDOW`]; one more death fails every job.
pub const MAX_RESTARTS: u32 = 3;

/// The period over which restarts are counted: an actor that dies now and then, in a long
/// session, is restarted every time.
pub const RESTART_WINDOW: Duration = Duration::from_secs(60);

/// The wait before the first restart of an actor; each later one waits twice as long.
pub const BACKOFF: Duration = Duration::from_millis(10);

/// The addresses of the supervised actors.
#[derive(Debug, Clone)]
pub struct Children {
    /// The graph planner.
    pub planner: Addr<GraphPlannerActor>,
    /// The storage actor.
    pub storage: Addr<StorageActor>,
    /// The device actors: the CPU pool's ([`CPU_DEVICE`]) and one per GPU.
    pub devices: HashMap<DeviceId, Addr<DeviceActor>>,
}

/// Owns the other actors' lifetimes.
#[derive(Debug)]
pub struct Supervisor {
    config: SystemConfig,
    store: StoreConfig,
    storage_threads: StorageThreads,
    children: Children,
    /// When each actor was restarted, within the last [`RESTART_WINDOW`].
    restarts: HashMap<ActorName, Vec<Instant>>,
    stopping: bool,
}

impl Supervisor {
    /// Starts the supervisor with storage (on its own thread, recorded in
    /// `storage_threads`), the CPU pool, a device actor per GPU in `config.gpus` and the
    /// planner (inside a running actix `System`), all accounting host memory in `pool` and
    /// recording with `recorder`; registers the devices with the planner, and returns the
    /// supervisor's and the planner's addresses.
    pub fn launch(
        config: SystemConfig,
        pool: Arc<HostPool>,
        recorder: Arc<Recorder>,
        storage_threads: StorageThreads,
    ) -> io::Result<(Addr<Supervisor>, Addr<GraphPlannerActor>)> {
        let store = StoreConfig {
            pool: Arc::clone(&pool),
            spill_parent: config.spill_dir.clone(),
            disk_budget: config.disk_budget,
            faults: config.faults.clone(),
            limit_resident: config.limit_resident,
            recorder: Arc::clone(&recorder),
        };
        let mut devices = vec![cpu_device(&config, &store)?];
        for gpu in &config.gpus {
            devices.push(gpu_device(&config, &store, gpu_device_id(gpu.ordinal()))?);
        }
        let ctx = Context::<Supervisor>::new();
        let me = ctx.address().recipient();
        let storage = StorageActor::launch(
            store.clone(),
            me.clone(),
            storage_thread(&config),
            &storage_threads,
        )?;
        let planner = GraphPlannerActor::new(storage.clone(), pool, recorder).start();
        let devices = devices
            .into_iter()
            .map(|d| (d.id(), start_device(d, me.clone(), &planner)))
            .collect();
        let supervisor = ctx.run(Supervisor {
            config,
            store,
            storage_threads,
            children: Children {
                planner: planner.clone(),
                storage,
                devices,
            },
            restarts: HashMap::new(),
            stopping: false,
        });
        Ok((supervisor, planner))
    }

    /// The supervised actors.
    pub fn children(&self) -> &Children {
        &self.children
    }

    /// Starts a new actor in place of `actor`, which died, and tells the planner.
    fn restart(&mut self, actor: ActorName, ctx: &mut Context<Self>) {
        if self.stopping {
            return;
        }
        let me = ctx.address().recipient();
        match actor {
            ActorName::Storage => {
                let thread = storage_thread(&self.config);
                match StorageActor::launch(self.store.clone(), me, thread, &self.storage_threads) {
                    Ok(storage) => {
                        self.children.planner.do_send(StorageRestarted {
                            storage: storage.clone(),
                        });
                        self.children.storage = storage;
                    }
                    Err(e) => {
                        tracing::error!(error = %e, "cannot restart the storage actor");
                        self.give_up(actor);
                        return;
                    }
                }
            }
            ActorName::Device(id) => {
                let device = match id {
                    CPU_DEVICE => cpu_device(&self.config, &self.store),
                    id => gpu_device(&self.config, &self.store, id),
                };
                match device {
                    Ok(device) => {
                        let addr = start_device(device, me, &self.children.planner);
                        self.children.devices.insert(id, addr);
                    }
                    Err(e) => {
                        tracing::error!(error = %e, %id, "cannot restart a device actor");
                        self.give_up(actor);
                        return;
                    }
                }
            }
        }
        tracing::info!(%actor, "restarted");
    }

    fn give_up(&mut self, actor: ActorName) {
        let restarts = self.restarts.get(&actor).map_or(0, Vec::len) as u32;
        tracing::error!(%actor, restarts, "giving up on an actor that keeps dying");
        self.children.planner.do_send(ActorDown {
            actor,
            restarting: false,
            restarts,
        });
    }
}

/// The name of the storage actor's thread.
fn storage_thread(config: &SystemConfig) -> String {
    format!("{}-store", config.thread_prefix)
}

/// The CPU pool's device actor, recording with the store's recorder.
fn cpu_device(config: &SystemConfig, store: &StoreConfig) -> io::Result<DeviceActor> {
    DeviceActor::cpu(
        &config.thread_prefix,
        config.cpu_threads,
        config.faults.clone(),
        Arc::clone(&store.recorder),
    )
}

/// The device actor `id` of one of `config.gpus` (a restart drives the same opened GPU
/// from new host threads), recording with the store's recorder.
fn gpu_device(config: &SystemConfig, store: &StoreConfig, id: DeviceId) -> io::Result<DeviceActor> {
    let gpu = config
        .gpus
        .iter()
        .find(|g| gpu_device_id(g.ordinal()) == id)
        .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, format!("no GPU is {id}")))?;
    DeviceActor::cuda(
        &config.thread_prefix,
        Arc::clone(gpu),
        config.faults.clone(),
        Arc::clone(&store.recorder),
    )
}

/// Starts a device supervised by `supervisor` and registers it with the planner.
fn start_device(
    device: DeviceActor,
    supervisor: actix::Recipient<ActorDied>,
    planner: &Addr<GraphPlannerActor>,
) -> Addr<DeviceActor> {
    let (id, kind, slots) = (device.id(), device.executor().kind(), device.slots());
    let addr = device.supervised_by(supervisor).start();
    planner.do_send(AddDevice {
        id,
        kind,
        slots,
        device: addr.clone().recipient(),
    });
    addr
}

impl Actor for Supervisor {
    type Context = Context<Self>;

    /// Stopping the supervisor stops storage (its thread ends as its store removes the
    /// spill folder) and the system, which drops every other actor (each device actor joins
    /// its threads as it drops).
    fn stopped(&mut self, _: &mut Self::Context) {
        tracing::debug!("supervisor stopped; stopping the actor system");
        self.children.storage.do_send(Shutdown);
        System::current().stop();
    }
}

impl Handler<ActorDied> for Supervisor {
    type Result = ();

    fn handle(&mut self, msg: ActorDied, ctx: &mut Self::Context) {
        if self.stopping {
            return;
        }
        let actor = msg.actor;
        let now = Instant::now();
        let recent = self.restarts.entry(actor).or_default();
        recent.retain(|&t| now.duration_since(t) < RESTART_WINDOW);
        let made = recent.len() as u32;
        if made >= MAX_RESTARTS {
            return self.give_up(actor);
        }
        recent.push(now);
        let delay = BACKOFF * 2u32.pow(made);
        tracing::warn!(%actor, restart = made + 1, ?delay, "actor died; restarting it");
        self.children.planner.do_send(ActorDown {
            actor,
            restarting: true,
            restarts: made + 1,
        });
        ctx.run_later(delay, move |act, ctx| act.restart(actor, ctx));
    }
}

impl Handler<Shutdown> for Supervisor {
    type Result = ();

    fn handle(&mut self, _: Shutdown, ctx: &mut Self::Context) {
        self.stopping = true;
        ctx.stop();
    }
}
