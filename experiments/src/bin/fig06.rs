alto_experiments::figure_main!(
    "Figure 6: ALTO's MTTKRP speedup and compression against the best mode-agnostic and mode-specific formats",
    "fig06"
);
