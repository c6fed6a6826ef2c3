// Where the login page goes after signing in: an invitation opened before signing in comes back.
export const AFTER_LOGIN_KEY = "netloom:after-login";
