alto_experiments::figure_main!(
    "Figure 7: parallel MTTKRP speedup of every format over sequential ALTO, at every thread count",
    "fig07"
);
