"""The scaling projection past this machine (`projection`) and its link presets (`interconnects`)."""
