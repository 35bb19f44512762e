/* graph_ names and a stray unprefixed one */
