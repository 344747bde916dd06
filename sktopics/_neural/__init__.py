"""Neural (amortised variational) topic models: AVITM, ProdLDA and their machinery."""
