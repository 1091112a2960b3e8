"""What only the command line uses: progress lines (:mod:`.progress`), plots (:mod:`.plots`),
Graphviz pictures (:mod:`.graphviz`), output files written whole (:mod:`.output`) and the text of
enumerated rows (:mod:`.rows_text`)."""
