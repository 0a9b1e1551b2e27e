//! A cap on calls in flight whose size is read at each call: the land's
//! `llm_calls_in_flight_max` and `mcp_calls_in_flight_max` are folded
//! configuration, so a value set by an act holds from the next call without
//! restarting a client (a fixed-size semaphore could not shrink or grow).
//!
//! A call waits while as many calls as it was told to allow are in flight;
//! each slot given back wakes the waiters to look again.

use std::sync::{Mutex, PoisonError};
use tokio::sync::Notify;

/// Calls in flight, and the waiters for a free slot.
#[derive(Default)]
pub struct InFlight {
    count: Mutex<usize>,
    freed: Notify,
}

/// One call's slot, given back when dropped.
pub struct Slot<'a> {
    gate: &'a InFlight,
}

impl InFlight {
    /// A slot, once fewer than `most` calls (at least one) are in flight.
    pub async fn acquire(&self, most: usize) -> Slot<'_> {
        loop {
            let freed = self.freed.notified();
            tokio::pin!(freed);
            // Registered before the count is read: a slot given back
            // between the read and the wait still wakes this call.
            freed.as_mut().enable();
            {
                let mut count = self.count.lock().unwrap_or_else(PoisonError::into_inner);
                if *count < most.max(1) {
                    *count += 1;
                    return Slot { gate: self };
                }
            }
            freed.await;
        }
    }

    /// Calls in flight now.
    pub fn count(&self) -> usize {
        *self.count.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        *self.gate.count.lock().unwrap_or_else(PoisonError::into_inner) -= 1;
        self.gate.freed.notify_waiters();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::time::Duration;

    /// Runs `calls` calls of 20 ms each through a gate allowing `most` and
    /// returns the most that were ever in flight together.
    async fn most_in_flight(most: usize, calls: usize) -> usize {
        let gate = Arc::new(InFlight::default());
        let seen = Arc::new(Mutex::new(0usize));
        let mut running = Vec::new();
        for _ in 0..calls {
            let (gate, seen) = (gate.clone(), seen.clone());
            running.push(tokio::spawn(async move {
                let _slot = gate.acquire(most).await;
                {
                    let mut seen = seen.lock().unwrap();
                    *seen = (*seen).max(gate.count());
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }));
        }
        for call in running {
            call.await.unwrap();
        }
        assert_eq!(gate.count(), 0, "every slot is given back");
        let seen = *seen.lock().unwrap();
        seen
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn calls_in_flight_never_pass_the_cap_they_were_given() {
        for (most, calls, expected) in [(1, 6, 1), (3, 9, 3), (8, 4, 4), (0, 3, 1)] {
            assert_eq!(most_in_flight(most, calls).await, expected, "cap {most}, {calls} calls");
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_smaller_cap_holds_from_the_next_call_while_others_are_in_flight() {
        let gate = Arc::new(InFlight::default());
        let first = gate.acquire(2).await;
        let second = gate.acquire(2).await;
        // Asked with a cap of 1 while two are in flight: it waits for both.
        let waiting = {
            let gate = gate.clone();
            tokio::spawn(async move {
                let _slot = gate.acquire(1).await;
            })
        };
        tokio::time::sleep(Duration::from_millis(30)).await;
        assert!(!waiting.is_finished(), "two in flight, a cap of one: it waits");
        drop(first);
        tokio::time::sleep(Duration::from_millis(30)).await;
        assert!(!waiting.is_finished(), "one in flight, a cap of one: it still waits");
        drop(second);
        tokio::time::timeout(Duration::from_secs(5), waiting).await.expect("it runs once none are in flight").unwrap();
    }
}
