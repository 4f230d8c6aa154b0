//! The warnings of one file, capped per rule (the collector every stage pushes into).

use crate::error::Finding;
use crate::limits::Config;
use crate::rules::Rule;

/// The warnings of one file, capped per rule: the first `cap` of each rule in file order are
/// kept, and every rule's exact count. Memory follows the number of rules, not the number of
/// faults in a hostile header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Warnings {
    cap: usize,
    /// Rules not reported at all ([`Config::allow`]).
    allow: Vec<Rule>,
    next_seq: u64,
    /// Kept findings and their arrival order; sorted by (offset, arrival) when settled.
    list: Vec<Finding>,
    seqs: Vec<u64>,
    /// Per rule, in order of first appearance: (rule, total seen, currently kept).
    counts: Vec<(Rule, u64, usize)>,
    settled: bool,
}

impl Warnings {
    /// Warnings under `config`'s cap and allowed rules.
    pub(crate) fn for_config(config: &Config) -> Self {
        Warnings {
            allow: config
                .allow
                .iter()
                .copied()
                .filter(|&r| config.allows(r))
                .collect(),
            ..Warnings::new(config.max_warnings_per_rule)
        }
    }

    pub(crate) fn new(cap: usize) -> Self {
        Warnings {
            allow: Vec::new(),
            cap: cap.max(1),
            next_seq: 0,
            list: Vec::new(),
            seqs: Vec::new(),
            counts: Vec::new(),
            settled: true,
        }
    }

    /// Count `n` more findings of `rule` that are not kept: they lie past the cap (their
    /// producer kept only the first ones).
    pub(crate) fn count(&mut self, rule: Rule, n: u64) {
        if n == 0 || self.allow.contains(&rule) {
            return;
        }
        match self.counts.iter_mut().find(|c| c.0 == rule) {
            Some(c) => c.1 += n,
            None => self.counts.push((rule, n, 0)),
        }
    }

    pub(crate) fn push(&mut self, f: Finding) {
        let rule = f.rule();
        if self.allow.contains(&rule) {
            return;
        }
        let i = match self.counts.iter().position(|c| c.0 == rule) {
            Some(i) => i,
            None => {
                self.counts.push((rule, 0, 0));
                self.counts.len() - 1
            }
        };
        self.counts[i].1 += 1;
        self.counts[i].2 += 1;
        self.list.push(f);
        self.seqs.push(self.next_seq);
        self.next_seq += 1;
        self.settled = false;
        if self.counts[i].2 > 2 * self.cap {
            self.settle();
        }
    }

    /// Sort by (offset, arrival) and keep the first `cap` of each rule.
    pub(crate) fn settle(&mut self) {
        if self.settled {
            return;
        }
        let mut order: Vec<usize> = (0..self.list.len()).collect();
        order.sort_by_key(|&i| (self.list[i].offset(), self.seqs[i]));
        for c in &mut self.counts {
            c.2 = 0;
        }
        let mut list = Vec::with_capacity(order.len());
        let mut seqs = Vec::with_capacity(order.len());
        let mut taken: Vec<Option<Finding>> = std::mem::take(&mut self.list)
            .into_iter()
            .map(Some)
            .collect();
        for i in order {
            let Some(f) = taken[i].take() else { continue };
            let Some(c) = self.counts.iter_mut().find(|c| c.0 == f.rule()) else {
                continue;
            };
            if c.2 < self.cap {
                c.2 += 1;
                list.push(f);
                seqs.push(self.seqs[i]);
            }
        }
        self.list = list;
        self.seqs = seqs;
        self.settled = true;
    }

    /// The kept warnings in file order (call [`Warnings::settle`] first).
    pub(crate) fn as_slice(&self) -> &[Finding] {
        &self.list
    }

    /// The settled list, for comparisons.
    pub(crate) fn sorted(&self) -> Vec<Finding> {
        let mut w = self.clone();
        w.settle();
        w.list
    }

    /// Every rule that warned, with its exact count, in order of first appearance.
    pub(crate) fn counts(&self) -> impl Iterator<Item = (Rule, u64)> + '_ {
        self.counts.iter().map(|c| (c.0, c.1))
    }

    pub(crate) fn total(&self) -> u64 {
        self.counts.iter().map(|c| c.1).sum()
    }
}
