//! The features a grant can name, one per kind of data a reader may see.

use serde::{Deserialize, Serialize};

/// A named kind of data that a grant allows its key to read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Feature {
    FinalAnswer,
    History,
    Aggregate,
    Metadata,
    Artifacts,
    Status,
}

impl Feature {
    pub const ALL: [Feature; 6] = [
        Feature::FinalAnswer,
        Feature::History,
        Feature::Aggregate,
        Feature::Metadata,
        Feature::Artifacts,
        Feature::Status,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Feature::FinalAnswer => "final_answer",
            Feature::History => "history",
            Feature::Aggregate => "aggregate",
            Feature::Metadata => "metadata",
            Feature::Artifacts => "artifacts",
            Feature::Status => "status",
        }
    }

    /// What a grant of this feature lets its reader see, in one line (the console's grant form).
    pub fn exposes(self) -> &'static str {
        match self {
            Feature::FinalAnswer => "the run's final answer, masked, with its state and evidence",
            Feature::History => {
                "every message of the run: prompts, replies, tool calls and tool output"
            }
            Feature::Aggregate => {
                "the run's work state: running, waiting, finished, its child agents"
            }
            Feature::Metadata => {
                "agent, models, times, the session's name and where it forked from"
            }
            Feature::Artifacts => {
                "the files you register as the run's artifacts, and their contents"
            }
            Feature::Status => "whether the run exists and its status, nothing of its content",
        }
    }

    pub fn parse(s: &str) -> Option<Feature> {
        Feature::ALL.into_iter().find(|f| f.as_str() == s)
    }

    /// Parses a comma-separated list such as `final_answer,history`; duplicates collapse.
    /// An empty list or an unknown name is refused.
    pub fn parse_list(s: &str) -> Result<Vec<Feature>, String> {
        let mut out = Vec::new();
        for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let f = Feature::parse(part).ok_or_else(|| {
                format!(
                    "unknown feature {part:?}; known: {}",
                    Feature::ALL.map(Feature::as_str).join(", ")
                )
            })?;
            if !out.contains(&f) {
                out.push(f);
            }
        }
        if out.is_empty() {
            return Err("no feature named".into());
        }
        out.sort();
        Ok(out)
    }
}

impl std::fmt::Display for Feature {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn feature_names_round_trip() {
        for f in Feature::ALL {
            assert_eq!(Feature::parse(f.as_str()), Some(f));
        }
    }

    #[test]
    fn feature_list_refuses_unknown_and_empty() {
        assert!(Feature::parse_list("final_answer,bogus").is_err());
        assert!(Feature::parse_list(" , ").is_err());
        assert_eq!(
            Feature::parse_list("history,final_answer,history").unwrap(),
            vec![Feature::FinalAnswer, Feature::History]
        );
    }
}
