alto_experiments::figure_main!(
    "Figure 10: speedup of ALTO from rank specialization",
    "fig10"
);
