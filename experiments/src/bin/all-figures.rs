alto_experiments::figure_main!(
    "All figures (6, 7, 8, 10, 11, 12) and reports/SUMMARY.md, measuring each tensor once",
    "fig06",
    "fig07",
    "fig08",
    "fig10",
    "fig11",
    "fig12"
);
