"""The ground floor: what one run is (config, models, the adapter contract), how it is timed and
recorded (timing, results, the run folder's layout), and facts about the machine. Imports nothing
from the rest of mgbench, so every layer above can use it."""
