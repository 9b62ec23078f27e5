alto_experiments::figure_main!(
    "Figure 11: storage of every format relative to COO",
    "fig11"
);
