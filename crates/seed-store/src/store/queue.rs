//! The append queue every backend's committer drains: requests, the loop
//! that gathers them into groups (a reindex waits for what was queued
//! before it), and the handle the store keeps to send and to stop.

use crate::fact::Fact;
use crate::store::work::{SealTurn, TurnTicket};
use crate::store::{AppendTicket, Appended, ReindexReport, StoreError};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

/// An append's answer. A one-shot reply, not a channel of one slot: a
/// round holds one per fact until it is durable, and std's `sync_channel(1)`
/// took about 500 bytes each (its cache-padded ends) against ~100.
pub(crate) type Reply = oneshot::Sender<Result<Appended, StoreError>>;

pub(crate) enum Request {
    Append {
        fact: Box<Fact>,
        reply: Reply,
    },
    Reindex {
        reply: oneshot::Sender<Result<ReindexReport, StoreError>>,
    },
    /// A worker's fenced run of wakes: committed alone, all or nothing.
    Turn {
        facts: Vec<Fact>,
        turn: SealTurn,
        reply: oneshot::Sender<Result<Vec<Appended>, StoreError>>,
    },
}

/// What a committer does with what the queue gathers.
pub(crate) trait GroupWriter: Send + 'static {
    /// Writes a group (possibly empty) and answers every request of it.
    fn commit_group(&mut self, group: Vec<(Box<Fact>, Reply)>);
    fn reindex(&mut self) -> Result<ReindexReport, StoreError>;
    /// Writes a fenced run of wakes (stores with a wake queue only).
    fn commit_turn(&mut self, _facts: Vec<Fact>, _turn: SealTurn) -> Result<Vec<Appended>, StoreError> {
        Err(StoreError::NoWakeQueue)
    }
    /// Called once the queue is closed and drained.
    fn finish(&mut self) {}
}

impl Request {
    /// The facts this request asks to write.
    fn facts(&self) -> u64 {
        match self {
            Request::Append { .. } => 1,
            Request::Reindex { .. } => 0,
            Request::Turn { facts, .. } => facts.len() as u64,
        }
    }
}

/// Drains the queue into groups of at most `group_max` appends until every
/// sender is gone. `waiting` counts the facts queued and not yet answered.
fn run(mut writer: impl GroupWriter, receiver: Receiver<Request>, group_max: usize, waiting: Arc<AtomicU64>) {
    let answered = |facts: u64| {
        waiting.fetch_sub(facts, Ordering::Relaxed);
    };
    while let Ok(first) = receiver.recv() {
        let mut group = Vec::new();
        let mut pending = Some(first);
        while let Some(request) = pending.take() {
            match request {
                Request::Append { fact, reply } => group.push((fact, reply)),
                Request::Reindex { reply } => {
                    // Everything queued before the reindex is written first.
                    let written = group.len() as u64;
                    writer.commit_group(std::mem::take(&mut group));
                    answered(written);
                    let _ = reply.send(writer.reindex());
                }
                Request::Turn { facts, turn, reply } => {
                    // In queue order: what came before is written first.
                    let written = group.len() as u64;
                    writer.commit_group(std::mem::take(&mut group));
                    answered(written);
                    let turn_facts = facts.len() as u64;
                    let _ = reply.send(writer.commit_turn(facts, turn));
                    answered(turn_facts);
                }
            }
            if group.len() < group_max {
                pending = receiver.try_recv().ok();
            }
        }
        let written = group.len() as u64;
        writer.commit_group(group);
        answered(written);
    }
    writer.finish();
}

/// What a write to a store without a committer gets: a store opened to
/// read only refuses it as such; one whose committer stopped is closed.
pub(crate) fn no_committer(read_only: bool) -> StoreError {
    if read_only {
        StoreError::ReadOnly
    } else {
        StoreError::Closed
    }
}

/// A running committer: the sending end of its queue and its thread.
pub(crate) struct Committing {
    sender: Mutex<Option<SyncSender<Request>>>,
    thread: Mutex<Option<JoinHandle<()>>>,
    /// Facts queued and not yet written (the depth `/metrics` reports).
    waiting: Arc<AtomicU64>,
}

impl Committing {
    /// Starts `writer` on its own thread behind a queue of `queue_max` requests.
    pub fn start(writer: impl GroupWriter, queue_max: usize, group_max: usize) -> std::io::Result<Committing> {
        let (sender, receiver) = sync_channel(queue_max);
        let group_max = group_max.max(1);
        let waiting = Arc::new(AtomicU64::new(0));
        let counted = waiting.clone();
        let thread = std::thread::Builder::new()
            .name("seed-committer".into())
            .spawn(move || run(writer, receiver, group_max, counted))?;
        Ok(Committing { sender: Mutex::new(Some(sender)), thread: Mutex::new(Some(thread)), waiting })
    }

    /// A store with no committer (opened to read only).
    pub fn none() -> Committing {
        Committing { sender: Mutex::new(None), thread: Mutex::new(None), waiting: Arc::new(AtomicU64::new(0)) }
    }

    /// Facts queued for the committer and not yet written.
    pub fn facts_waiting(&self) -> u64 {
        self.waiting.load(Ordering::Relaxed)
    }

    /// Queues `request`; `when_none` is the error when there is no committer.
    pub fn send(&self, request: Request, when_none: StoreError) -> Result<(), StoreError> {
        let guard = self.sender.lock().map_err(|_| StoreError::Closed)?;
        let facts = request.facts();
        match guard.as_ref() {
            Some(sender) => {
                // Counted before it is sent, so the committer never answers
                // a request the count does not yet hold.
                self.waiting.fetch_add(facts, Ordering::Relaxed);
                sender.send(request).map_err(|_| {
                    self.waiting.fetch_sub(facts, Ordering::Relaxed);
                    StoreError::Closed
                })
            }
            None => Err(when_none),
        }
    }

    /// Queues an append.
    pub fn submit(&self, fact: Fact, when_none: StoreError) -> AppendTicket {
        let (reply, receiver) = oneshot::channel();
        match self.send(Request::Append { fact: Box::new(fact), reply }, when_none) {
            Ok(()) => AppendTicket::waiting(receiver),
            Err(error) => AppendTicket::failed(error),
        }
    }

    /// Asks for a reindex after everything queued before it.
    pub fn reindex(&self, when_none: StoreError) -> Result<ReindexReport, StoreError> {
        let (reply, receiver) = oneshot::channel();
        self.send(Request::Reindex { reply }, when_none)?;
        receiver.recv().unwrap_or(Err(StoreError::Closed))
    }

    /// Queues a fenced run of wakes.
    pub fn submit_turn(&self, facts: Vec<Fact>, turn: SealTurn, when_none: StoreError) -> TurnTicket {
        let (reply, receiver) = oneshot::channel();
        match self.send(Request::Turn { facts, turn, reply }, when_none) {
            Ok(()) => TurnTicket::waiting(receiver),
            Err(error) => TurnTicket::failed(error),
        }
    }

    /// Closes the queue and waits until the committer has written all of it.
    pub fn stop(&self) {
        if let Ok(mut sender) = self.sender.lock() {
            sender.take();
        }
        if let Ok(mut thread) = self.thread.lock() {
            if let Some(thread) = thread.take() {
                let _ = thread.join();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fact::{BeingId, FactId, UnsignedFact};

    /// A writer that answers a group only once the test lets it.
    struct HeldWriter {
        release: Receiver<()>,
    }

    impl GroupWriter for HeldWriter {
        fn commit_group(&mut self, group: Vec<(Box<Fact>, Reply)>) {
            if group.is_empty() {
                return;
            }
            let _ = self.release.recv();
            for (land_seq, (fact, reply)) in group.into_iter().enumerate() {
                let _ = reply.send(Ok(Appended { id: fact.id(), land_seq: land_seq as u64, duplicate: false }));
            }
        }
        fn reindex(&mut self) -> Result<ReindexReport, StoreError> {
            Err(StoreError::Closed)
        }
    }

    fn fact(seq: u64) -> Fact {
        let key = ed25519_dalek::SigningKey::from_bytes(&[7; 32]);
        let being = BeingId(key.verifying_key().to_bytes());
        UnsignedFact::new(being, seq, FactId([0; 32]), 0, "note", vec![0xa0]).expect("a fact").sign(&key)
    }

    #[test]
    fn the_append_queue_counts_the_facts_it_has_not_written_yet() {
        let (release, held) = sync_channel(16);
        let committing = Committing::start(HeldWriter { release: held }, 64, 64).expect("a committer");
        assert_eq!(committing.facts_waiting(), 0);
        let tickets: Vec<AppendTicket> = (1..=3).map(|seq| committing.submit(fact(seq), StoreError::Closed)).collect();
        assert_eq!(committing.facts_waiting(), 3, "queued, none written");
        for _ in 0..3 {
            release.send(()).expect("the writer waits");
        }
        for ticket in tickets {
            ticket.wait().expect("written");
        }
        // The count drops right after the group's answers go out.
        let mut tries = 0;
        while committing.facts_waiting() != 0 && tries < 1000 {
            std::thread::sleep(std::time::Duration::from_millis(1));
            tries += 1;
        }
        assert_eq!(committing.facts_waiting(), 0);
        committing.stop();
        let none = Committing::none();
        assert!(none.submit(fact(4), StoreError::ReadOnly).wait().is_err());
        assert_eq!(none.facts_waiting(), 0, "a refused append is not counted");
    }
}
