/* common_ names, cov_public_call and a cov_ name the API does not declare */
