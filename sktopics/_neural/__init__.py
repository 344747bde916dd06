"""Neural (amortised variational) topic models and their machinery: AVITM and ProdLDA
(autoencoding variational inference), PAMVI and MoLDA (Pachinko allocation)."""
