alto_experiments::figure_main!("Figure 12: format construction time", "fig12");
