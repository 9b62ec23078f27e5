alto_experiments::figure_main!(
    "Figure 8: MTTKRP time per mode for nips, darpa, nell-2 and amazon",
    "fig08"
);
