"""The job's vocabulary, the lowest floor: what the user asked for (`job`) and one run of it
(`config`), the model catalogue (`models`) and the weights every framework starts from
(`initial_weights`), typed kinds, a target metric, bad input (`errors`), and reading and writing
files that may come from anywhere (`schema`, `safe_files`). Imports nothing else of mgbench."""
