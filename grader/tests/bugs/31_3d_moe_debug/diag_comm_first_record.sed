# Planted bug: over communicators an anomaly is timed by its communicator's first record (its seq 0)
# instead of the records of the anomalous seq.
# step: 31.4
# caught-by: several anomalies per dump: lowest seq, earliest across communicators
/^        \*when = INFINITY;$/,/^                \*when = recs\[r\]->t_enqueued;$/c\
        *when = INFINITY;\
        for (int i = 0; i < fl->nrec; i++)\
            if (strcmp(fl->rec[i].comm, comm) == 0 && fl->rec[i].seq >= 0 && fl->rec[i].t_enqueued < *when)\
                *when = fl->rec[i].t_enqueued;
