//! zipcoll
